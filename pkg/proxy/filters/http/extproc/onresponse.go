package extproc

import (
	"errors"
	"fmt"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	savev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/ext_proc/response_processors/save_processing_response/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// ResponseProcessorsCategory is the category of on_processing_response's
// extensions.
const ResponseProcessorsCategory = "envoy.http.ext_proc.response_processors"

// SaveProcessingResponseName is the one response processor, which the
// filter compiles itself (its registry entry has no factory).
const SaveProcessingResponseName = "proxy.http.ext_proc.response_processors.save_processing_response"

// saveStateName is the filter state name the saved answers go under, as
// in Envoy (SaveProcessingResponseFilterState::kFilterStateName).
const saveStateName = "envoy.http.ext_proc.response_processors.save_processing_response"

// saveOptions is one SaveOptions: whether answers of its kind are saved,
// and whether they are when applying them failed.
type saveOptions struct {
	save, onError bool
}

// responseSaver is a compiled SaveProcessingResponse: after each answer
// of a kind it saves, the answer goes into the request's filter state
// under key, replacing the one saved before, as Envoy's
// SaveProcessingResponse does.
type responseSaver struct {
	key                                                  string
	requestHeaders, responseHeaders                      saveOptions
	requestTrailers, responseTrailers, immediateResponse saveOptions
}

// compileOnProcessingResponse compiles on_processing_response; errors
// name the field below it.
func compileOnProcessingResponse(tc *corev3.TypedExtensionConfig) (*responseSaver, error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, errors.New("on_processing_response.typed_config: must be set")
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("on_processing_response.typed_config: %w", err)
	}
	p, ok := m.(*savev3.SaveProcessingResponse)
	if !ok {
		return nil, fmt.Errorf("on_processing_response.typed_config: %s is not supported by Outrigger (supported: envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse)", m.ProtoReflect().Descriptor().FullName())
	}
	opts := func(o *savev3.SaveProcessingResponse_SaveOptions) saveOptions {
		return saveOptions{save: o.GetSaveResponse(), onError: o.GetSaveOnError()}
	}
	s := &responseSaver{
		key:               saveStateName,
		requestHeaders:    opts(p.GetSaveRequestHeaders()),
		responseHeaders:   opts(p.GetSaveResponseHeaders()),
		requestTrailers:   opts(p.GetSaveRequestTrailers()),
		responseTrailers:  opts(p.GetSaveResponseTrailers()),
		immediateResponse: opts(p.GetSaveImmediateResponse()),
	}
	if sfx := p.GetFilterStateNameSuffix(); sfx != "" {
		s.key += "." + sfx
	}
	return s, nil
}

// options are the SaveOptions of an answer's kind; the kinds Envoy's
// processor does not save (bodies) save nothing.
func (s *responseSaver) options(r *extprocsvc.ProcessingResponse) saveOptions {
	switch r.GetResponse().(type) {
	case *extprocsvc.ProcessingResponse_RequestHeaders:
		return s.requestHeaders
	case *extprocsvc.ProcessingResponse_ResponseHeaders:
		return s.responseHeaders
	case *extprocsvc.ProcessingResponse_RequestTrailers:
		return s.requestTrailers
	case *extprocsvc.ProcessingResponse_ResponseTrailers:
		return s.responseTrailers
	case *extprocsvc.ProcessingResponse_ImmediateResponse:
		return s.immediateResponse
	}
	return saveOptions{}
}

// after runs once the filter has handled answer r; failure is what
// handling it failed with (a rejected mutation, an answer of the wrong
// kind), nil when it went well. saved is the request's object.
func (s *responseSaver) after(saved *savedResponse, r *extprocsvc.ProcessingResponse, failure error) {
	if o := s.options(r); o.save && (failure == nil || o.onError) {
		saved.set(r, failure)
	}
}

// start puts the request's object in its filter state, empty (which the
// access log shows as absent) until an answer is saved. It is made with
// the request head, where the stream's filter state may change: answers
// to streamed bodies' trailers come on another goroutine.
func (s *responseSaver) start(st httpfilter.Stream) *savedResponse {
	saved := &savedResponse{}
	st.SetFilterState(s.key, saved)
	return saved
}

// savedResponse is the filter state object of the saved answer: the last
// one saved, and the error handling it failed with. Envoy's object has
// no serialized form (C++ filters read it); Outrigger's shows the answer
// in %FILTER_STATE%: as JSON (PLAIN), as the ProcessingResponse (TYPED),
// and its fields "status" ("OK", or the error) and "response" (the JSON).
type savedResponse struct {
	mu     sync.Mutex
	r      *extprocsvc.ProcessingResponse
	status string
}

var (
	_ accesslog.FilterStateObject  = (*savedResponse)(nil)
	_ accesslog.FilterStateFielder = (*savedResponse)(nil)
)

// set replaces the saved answer.
func (s *savedResponse) set(r *extprocsvc.ProcessingResponse, failure error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r, s.status = r, "OK"
	if failure != nil {
		s.status = failure.Error()
	}
}

// json is the saved answer as JSON; the lock is held.
func (s *savedResponse) json() string {
	b, err := protojson.MarshalOptions{}.Marshal(s.r)
	if err != nil {
		return ""
	}
	return string(b)
}

// FilterStateString implements accesslog.FilterStateObject.
func (s *savedResponse) FilterStateString() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		return "", false
	}
	return s.json(), true
}

// FilterStateProto implements accesslog.FilterStateObject.
func (s *savedResponse) FilterStateProto() proto.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		return nil
	}
	return s.r
}

// FilterStateField implements accesslog.FilterStateFielder.
func (s *savedResponse) FilterStateField(name string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		return nil, false
	}
	switch name {
	case "status":
		return s.status, true
	case "response":
		return s.json(), true
	}
	return nil, false
}
