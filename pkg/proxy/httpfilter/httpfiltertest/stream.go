// Package httpfiltertest has fakes for testing HTTP filters without a
// connection manager: a Stream that records what a filter does to it.
package httpfiltertest

import (
	"net/http"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Headers is a header map in insertion order, with lower-case names. It
// implements router.HeaderEditor.
type Headers struct {
	fields [][2]string
}

// NewHeaders returns headers from name, value pairs.
func NewHeaders(pairs ...string) *Headers {
	h := &Headers{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Add(pairs[i], pairs[i+1])
	}
	return h
}

// Get implements router.HeaderEditor: several values come back joined by
// ",".
func (h *Headers) Get(name string) (string, bool) {
	var vs []string
	for _, f := range h.fields {
		if f[0] == name {
			vs = append(vs, f[1])
		}
	}
	return strings.Join(vs, ","), len(vs) > 0
}

// Values are the header's values, each field apart (Set-Cookie values
// hold commas).
func (h *Headers) Values(name string) []string {
	var vs []string
	for _, f := range h.fields {
		if f[0] == name {
			vs = append(vs, f[1])
		}
	}
	return vs
}

// Set implements router.HeaderEditor.
func (h *Headers) Set(name, value string) {
	h.Del(name)
	h.Add(name, value)
}

// Add implements router.HeaderEditor.
func (h *Headers) Add(name, value string) {
	h.fields = append(h.fields, [2]string{strings.ToLower(name), value})
}

// Del implements router.HeaderEditor.
func (h *Headers) Del(name string) {
	out := h.fields[:0]
	for _, f := range h.fields {
		if f[0] != name {
			out = append(out, f)
		}
	}
	h.fields = out
}

// Range calls fn with each field in order until fn returns false, as the
// connection manager's header list does.
func (h *Headers) Range(fn func(name, value string) bool) {
	for _, f := range h.fields {
		if !fn(f[0], f[1]) {
			return
		}
	}
}

// Len is the number of header fields.
func (h *Headers) Len() int { return len(h.fields) }

// LocalReply is what a filter answered with.
type LocalReply struct {
	Status int
	// GrpcStatus is set by SendGrpcLocalReply (HasGrpcStatus).
	GrpcStatus    uint32
	HasGrpcStatus bool
	Body          string
	Flags         accesslog.ResponseFlags
	Details       string
}

// Stream is a fake httpfilter.Stream. Set its fields, run the filter's
// steps on it, and look at what they changed.
type Stream struct {
	// Req is the request; its Headers are ReqHeaders when nil.
	Req        router.Request
	ReqHeaders *Headers
	// RespHeaders and Status are the response, for EncodeHeaders.
	RespHeaders *Headers
	Status      int
	// Matched is the route (nil: none) and Cluster its cluster.
	Matched *router.Route
	Cluster string
	// PerRoute are the per-route configurations by filter name, least
	// specific first.
	PerRoute map[string][]httpfilter.RouteConfig
	Remote   string
	// UpstreamSource is what SetUpstreamSource recorded.
	UpstreamSource upstream.Source
	// OverrideHost is what SetUpstreamOverrideHost recorded.
	OverrideHost upstream.OverrideHost
	// Flags are the response flags added; Reply the local reply sent.
	Flags accesslog.ResponseFlags
	Reply *LocalReply
	// Replaced is the response ReplaceResponse put in place.
	Replaced *LocalReply
	// HealthCheck is set by MarkHealthCheck.
	HealthCheck bool
	// Slept are the sleeps asked for; CutSleep makes them fail, as when
	// the client has gone.
	Slept    []time.Duration
	CutSleep bool
	// RouteCleared counts ClearRouteCache calls.
	RouteCleared int
	// Body is the request body BufferRequestBody reads (nil: none);
	// Buffered records the calls' limits.
	Body     []byte
	Buffered []int
	// StreamInfo is what Info returns.
	StreamInfo httpfilter.StreamInfo
	// CutWait makes Wait fail, as when the client has gone.
	CutWait bool
	// Metadata is the dynamic metadata (DynamicMetadata,
	// SetDynamicMetadata).
	Metadata *corev3.Metadata
	// FilterState is what SetFilterState kept, by key; ConnFilterState
	// the connection's filter state (what network filters kept).
	FilterState     map[string]accesslog.FilterStateObject
	ConnFilterState map[string]any

	// ReqBodyLen and ReqHasBody describe the request body (RequestBody);
	// RespBodyLen and RespHasBody the response's (ResponseBody).
	ReqBodyLen  int64
	ReqHasBody  bool
	RespBodyLen int64
	RespHasBody bool
	// Decoders and Encoders are the body transformers the filter asked
	// for; DecodeBody and EncodeBody run them.
	Decoders []httpfilter.DataDecoder
	Encoders []httpfilter.DataEncoder

	conn  map[any]any
	state map[any]any
}

// RequestBody implements httpfilter.Stream.
func (s *Stream) RequestBody() (int64, bool) { return s.ReqBodyLen, s.ReqHasBody }

// ResponseBody implements httpfilter.Stream.
func (s *Stream) ResponseBody() (int64, bool) { return s.RespBodyLen, s.RespHasBody }

// TransformRequestBody implements httpfilter.Stream.
func (s *Stream) TransformRequestBody(d httpfilter.DataDecoder) { s.Decoders = append(s.Decoders, d) }

// TransformResponseBody implements httpfilter.Stream.
func (s *Stream) TransformResponseBody(e httpfilter.DataEncoder) { s.Encoders = append(s.Encoders, e) }

// StreamState implements httpfilter.Stream.
func (s *Stream) StreamState(key any, create func() any) any {
	if s.state == nil {
		s.state = map[any]any{}
	}
	v, ok := s.state[key]
	if !ok {
		v = create()
		s.state[key] = v
	}
	return v
}

// DecodeBody runs the request body, in the given pieces, through the
// decoders the filter asked for, and returns what they made of it.
func (s *Stream) DecodeBody(pieces ...[]byte) ([]byte, error) {
	var out []byte
	for _, p := range pieces {
		for _, d := range s.Decoders {
			var err error
			if p, err = d.DecodeData(p); err != nil {
				return out, err
			}
		}
		out = append(out, p...)
	}
	for i, d := range s.Decoders {
		tail, err := d.DecodeEnd()
		if err != nil {
			return out, err
		}
		for _, next := range s.Decoders[i+1:] {
			if tail, err = next.DecodeData(tail); err != nil {
				return out, err
			}
		}
		out = append(out, tail...)
	}
	return out, nil
}

// EncodeBody runs the response body, in the given pieces, and trailers
// through the encoders the filter asked for, and returns what they made
// of them.
func (s *Stream) EncodeBody(trailers http.Header, pieces ...[]byte) ([]byte, http.Header, error) {
	var out []byte
	for _, p := range pieces {
		for _, e := range s.Encoders {
			var err error
			if p, err = e.EncodeData(p); err != nil {
				return out, trailers, err
			}
		}
		out = append(out, p...)
	}
	for i, e := range s.Encoders {
		tail, t, err := e.EncodeEnd(trailers)
		if err != nil {
			return out, trailers, err
		}
		trailers = t
		for _, next := range s.Encoders[i+1:] {
			if tail, err = next.EncodeData(tail); err != nil {
				return out, trailers, err
			}
		}
		out = append(out, tail...)
	}
	return out, trailers, nil
}

var _ httpfilter.Stream = (*Stream)(nil)

// NewStream returns a stream for a request with the given method, path
// and header pairs; the authority is "host".
func NewStream(method, path string, headers ...string) *Stream {
	s := &Stream{ReqHeaders: NewHeaders(headers...), RespHeaders: NewHeaders()}
	s.Req = router.Request{Method: method, Path: path, Host: "host", Scheme: "http", Headers: s.ReqHeaders}
	return s
}

// Request implements httpfilter.Stream.
func (s *Stream) Request() *router.Request {
	if s.Req.Headers == nil && s.ReqHeaders != nil {
		s.Req.Headers = s.ReqHeaders
	}
	return &s.Req
}

// RequestHeaders implements httpfilter.Stream.
func (s *Stream) RequestHeaders() router.HeaderEditor { return s.headers(&s.ReqHeaders) }

// SetPath implements httpfilter.Stream.
func (s *Stream) SetPath(path string) { s.Req.Path = path }

// SetAuthority implements httpfilter.Stream.
func (s *Stream) SetAuthority(host string) { s.Req.Host = host }

// ResponseHeaders implements httpfilter.Stream.
func (s *Stream) ResponseHeaders() router.HeaderEditor { return s.headers(&s.RespHeaders) }

func (s *Stream) headers(h **Headers) *Headers {
	if *h == nil {
		*h = NewHeaders()
	}
	return *h
}

// ResponseStatus implements httpfilter.Stream.
func (s *Stream) ResponseStatus() int { return s.Status }

// SendLocalReply implements httpfilter.Stream.
func (s *Stream) SendLocalReply(status int, body string, flags accesslog.ResponseFlags, details string) {
	s.Reply = &LocalReply{Status: status, Body: body, Flags: flags, Details: details}
	s.Status = status
	s.Flags |= flags
}

// SendGrpcLocalReply implements httpfilter.Stream.
func (s *Stream) SendGrpcLocalReply(status int, grpcStatus uint32, body string, flags accesslog.ResponseFlags, details string) {
	s.SendLocalReply(status, body, flags, details)
	s.Reply.GrpcStatus, s.Reply.HasGrpcStatus = grpcStatus, true
}

// SetResponseStatus implements httpfilter.ResponseStatusSetter.
func (s *Stream) SetResponseStatus(status int) { s.Status = status }

// ReplaceResponse implements httpfilter.Stream: the replacement is
// recorded in Replaced, and Status and RespHeaders change as the
// connection manager changes them.
func (s *Stream) ReplaceResponse(status int, body string) {
	s.Replaced = &LocalReply{Status: status, Body: body}
	s.Status = status
	s.RespHeaders = NewHeaders()
	if body != "" {
		s.RespHeaders.Add("content-type", "text/plain")
	}
}

// AddResponseFlags implements httpfilter.Stream.
func (s *Stream) AddResponseFlags(flags accesslog.ResponseFlags) { s.Flags |= flags }

// MarkHealthCheck implements httpfilter.Stream.
func (s *Stream) MarkHealthCheck() { s.HealthCheck = true }

// Route implements httpfilter.Stream.
func (s *Stream) Route() *router.Route { return s.Matched }

// ClusterName implements httpfilter.Stream.
func (s *Stream) ClusterName() string { return s.Cluster }

// ClearRouteCache implements httpfilter.Stream.
func (s *Stream) ClearRouteCache() { s.RouteCleared++ }

// RouteConfig implements httpfilter.Stream: the last (most specific) of
// PerRoute[name].
func (s *Stream) RouteConfig(name string) httpfilter.RouteConfig {
	cs := s.PerRoute[name]
	if len(cs) == 0 {
		return nil
	}
	return cs[len(cs)-1]
}

// RouteConfigs implements httpfilter.Stream.
func (s *Stream) RouteConfigs(name string, dst []httpfilter.RouteConfig) []httpfilter.RouteConfig {
	return append(dst, s.PerRoute[name]...)
}

// RemoteIP implements httpfilter.Stream.
func (s *Stream) RemoteIP() string { return s.Remote }

// SetUpstreamSource implements httpfilter.Stream: it records src in
// UpstreamSource.
func (s *Stream) SetUpstreamSource(src upstream.Source) { s.UpstreamSource = src }

// SetUpstreamOverrideHost implements httpfilter.Stream: it records o in
// OverrideHost.
func (s *Stream) SetUpstreamOverrideHost(o upstream.OverrideHost) { s.OverrideHost = o }

// ConnectionState implements httpfilter.Stream: one connection per fake
// stream.
func (s *Stream) ConnectionState(key any, create func() any) any {
	if s.conn == nil {
		s.conn = map[any]any{}
	}
	v, ok := s.conn[key]
	if !ok {
		v = create()
		s.conn[key] = v
	}
	return v
}

// Sleep implements httpfilter.Stream: it records d and returns at once.
func (s *Stream) Sleep(d time.Duration) bool {
	s.Slept = append(s.Slept, d)
	return !s.CutSleep
}

// Wait implements httpfilter.Stream: it waits for done, unless CutWait.
func (s *Stream) Wait(done <-chan struct{}) bool {
	if s.CutWait {
		return false
	}
	<-done
	return true
}

// BufferRequestBody implements httpfilter.Stream over Body: a body over
// limit without partial is answered 413, as the connection manager does.
func (s *Stream) BufferRequestBody(limit int, partial bool) ([]byte, bool, bool) {
	s.Buffered = append(s.Buffered, limit)
	switch {
	case s.Body == nil:
		return nil, true, true
	case !partial && len(s.Body) > limit:
		s.SendLocalReply(413, "Payload Too Large", 0, "request_payload_too_large")
		return nil, false, false
	case partial && len(s.Body) > limit:
		// The connection manager stops at limit or more, as the
		// pieces arrive; the fake holds limit+1 bytes.
		return s.Body[:limit+1], false, true
	}
	return s.Body, true, true
}

// RangeRequestHeaders implements httpfilter.Stream.
func (s *Stream) RangeRequestHeaders(fn func(name, value string) bool) {
	for _, f := range s.headers(&s.ReqHeaders).fields {
		if !fn(f[0], f[1]) {
			return
		}
	}
}

// DynamicMetadata implements httpfilter.Stream.
func (s *Stream) DynamicMetadata() *corev3.Metadata { return s.Metadata }

// SetDynamicMetadata implements httpfilter.Stream.
func (s *Stream) SetDynamicMetadata(namespace string, fields *structpb.Struct) {
	s.Metadata = accesslog.MergeMetadata(s.Metadata, namespace, fields)
}

// SetTypedDynamicMetadata implements httpfilter.Stream.
func (s *Stream) SetTypedDynamicMetadata(namespace string, value *anypb.Any) {
	s.Metadata = accesslog.SetTypedMetadata(s.Metadata, namespace, value)
}

// SetFilterState implements httpfilter.Stream.
func (s *Stream) SetFilterState(key string, obj accesslog.FilterStateObject) {
	if s.FilterState == nil {
		s.FilterState = map[string]accesslog.FilterStateObject{}
	}
	s.FilterState[key] = obj
}

// FilterStateValue implements httpfilter.Stream: FilterState's, else
// ConnFilterState's.
func (s *Stream) FilterStateValue(key string) (any, bool) {
	if o, ok := s.FilterState[key]; ok {
		return o, true
	}
	v, ok := s.ConnFilterState[key]
	return v, ok
}

// Info implements httpfilter.Stream.
func (s *Stream) Info() httpfilter.StreamInfo { return s.StreamInfo }
