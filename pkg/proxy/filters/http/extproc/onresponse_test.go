package extproc

import (
	"strings"
	"testing"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	savev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/ext_proc/response_processors/save_processing_response/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// onResponse is an on_processing_response of p.
func onResponse(t *testing.T, p *savev3.SaveProcessingResponse) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: "save", TypedConfig: a}
}

func TestSaveProcessingResponse(t *testing.T) {
	save := &savev3.SaveProcessingResponse_SaveOptions{SaveResponse: true}
	cases := []struct {
		name   string
		cfg    *savev3.SaveProcessingResponse
		answer *extprocsvc.ProcessingResponse
		// key is the filter state name; status and json what it shows,
		// "" for nothing saved.
		key, status, json string
		// strict makes any header mutation fail the request.
		strict bool
	}{
		{
			name:   "a request headers answer, saved under the suffixed name",
			cfg:    &savev3.SaveProcessingResponse{SaveRequestHeaders: save, FilterStateNameSuffix: "xyz"},
			answer: headersAnswer(&extprocsvc.CommonResponse{HeaderMutation: &extprocsvc.HeaderMutation{RemoveHeaders: []string{"x-a"}}}),
			key:    saveStateName + ".xyz", status: "OK", json: `"removeHeaders":["x-a"]`,
		},
		{
			name:   "an answer of a kind not asked for is not saved",
			cfg:    &savev3.SaveProcessingResponse{SaveResponseHeaders: save},
			answer: headersAnswer(&extprocsvc.CommonResponse{}),
			key:    saveStateName,
		},
		{
			name: "an immediate response",
			cfg:  &savev3.SaveProcessingResponse{SaveImmediateResponse: save},
			answer: &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
			}}},
			key: saveStateName, status: "OK", json: `"immediateResponse"`,
		},
		{
			name:   "a rejected mutation is saved only with save_on_error",
			cfg:    &savev3.SaveProcessingResponse{SaveRequestHeaders: save},
			answer: headersAnswer(&extprocsvc.CommonResponse{HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-b", RawValue: []byte("x")}}}}}),
			key:    saveStateName, strict: true,
		},
		{
			name:   "a rejected mutation with save_on_error",
			cfg:    &savev3.SaveProcessingResponse{SaveRequestHeaders: &savev3.SaveProcessingResponse_SaveOptions{SaveResponse: true, SaveOnError: true}},
			answer: headersAnswer(&extprocsvc.CommonResponse{HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-b", RawValue: []byte("x")}}}}}),
			key:    saveStateName, status: "modify x-b", json: `"x-b"`, strict: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := startScripted(t, func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
				if _, err := srv.Recv(); err != nil {
					return err
				}
				return srv.Send(tc.answer)
			}, func(p *extprocv3.ExternalProcessor) {
				p.OnProcessingResponse = onResponse(t, tc.cfg)
				p.MessageTimeout = durationpb.New(5e9)
				if tc.strict {
					p.MutationRules = &mutationrulesv3.HeaderMutationRules{DisallowAll: wrapperspb.Bool(true), DisallowIsError: wrapperspb.Bool(true)}
				}
			})
			s, _ := decode(c)
			obj, ok := s.FilterState[tc.key].(*savedResponse)
			if !ok {
				t.Fatalf("no object under %s: %v", tc.key, s.FilterState)
			}
			str, has := obj.FilterStateString()
			if tc.status == "" {
				if has {
					t.Fatalf("saved %s, want nothing", str)
				}
				return
			}
			if !has || !strings.Contains(str, tc.json) {
				t.Errorf("PLAIN %q, want it to contain %s", str, tc.json)
			}
			st, _ := obj.FilterStateField("status")
			if !strings.Contains(st.(string), tc.status) {
				t.Errorf("status %q, want %q in it", st, tc.status)
			}
			if obj.FilterStateProto() == nil {
				t.Error("no TYPED form")
			}
		})
	}
}

func TestOnProcessingResponseRefusesOtherTypes(t *testing.T) {
	a, _ := anypb.New(&extprocv3.ProcessingMode{})
	p := &extprocv3.ExternalProcessor{
		GrpcService:          processorAt("127.0.0.1:1"),
		OnProcessingResponse: &corev3.TypedExtensionConfig{Name: "x", TypedConfig: a},
	}
	_, err := compile(p, testContext())
	if err == nil || !strings.HasPrefix(err.Error(), "on_processing_response.typed_config: ") {
		t.Fatalf("got %v", err)
	}
}
