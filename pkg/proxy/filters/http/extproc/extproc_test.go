package extproc

import (
	"strings"
	"testing"
	"time"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/mutationrules"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// targetServices opens google_grpc channels (lazily connected) and knows
// no cluster.
type targetServices struct{}

func (targetServices) OpenGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
	return grpcservice.Open(gs, grpcservice.Context{})
}

func (targetServices) Cluster(string) grpcservice.Cluster { return nil }

// processorAt is a grpc_service reaching a target directly.
func processorAt(target string) *corev3.GrpcService {
	return &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_GoogleGrpc_{GoogleGrpc: &corev3.GrpcService_GoogleGrpc{
		TargetUri: target, StatPrefix: "proc",
	}}}
}

// testContext is a filter context with a fresh store.
func testContext() httpfilter.Context {
	return httpfilter.Context{
		Name:       "envoy.filters.http.ext_proc",
		Stats:      stats.NewStore(),
		StatPrefix: "http.in.",
		Log:        logr.Discard(),
		Now:        time.Now,
		Services:   targetServices{},
	}
}

func TestCompileRefusesWithPath(t *testing.T) {
	valid := func() *extprocv3.ExternalProcessor {
		return &extprocv3.ExternalProcessor{GrpcService: processorAt("127.0.0.1:1")}
	}
	cases := []struct {
		name string
		edit func(p *extprocv3.ExternalProcessor)
		want string
	}{
		{"no service", func(p *extprocv3.ExternalProcessor) { p.GrpcService = nil }, "grpc_service: must be set"},
		{"both services", func(p *extprocv3.ExternalProcessor) { p.HttpService = &extprocv3.ExtProcHttpService{} }, "http_service: One and only one of grpc_service or http_service"},
		{"http service without its service", func(p *extprocv3.ExternalProcessor) {
			p.GrpcService, p.HttpService = nil, &extprocv3.ExtProcHttpService{}
		}, "http_service.http_service: must be set"},
		{"http service headers", func(p *extprocv3.ExternalProcessor) {
			p.GrpcService, p.HttpService = nil, &extprocv3.ExtProcHttpService{HttpService: &corev3.HttpService{
				HttpUri:             &corev3.HttpUri{Uri: "http://proc/x", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "proc"}},
				RequestHeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "a", Value: "b"}}},
			}}
		}, "http_service.http_service.request_headers_to_add: not supported by Outrigger"},
		{"http service span", func(p *extprocv3.ExternalProcessor) {
			p.GrpcService, p.HttpService = nil, &extprocv3.ExtProcHttpService{HttpService: &corev3.HttpService{
				HttpUri: &corev3.HttpUri{Uri: "http://proc/x", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "proc"}},
			}}
			p.EmitClientSpan = wrapperspb.Bool(true)
		}, "emit_client_span: not supported with http_service"},
		{"attributes", func(p *extprocv3.ExternalProcessor) {
			p.RequestAttributes = []string{"request.path", "request.headers["}
		}, "request_attributes[1]: ERROR"},
		{"deferred close", func(p *extprocv3.ExternalProcessor) { p.DeferredCloseTimeout = durationpb.New(-time.Second) }, "deferred_close_timeout: must not be negative"},
		{"full duplex without trailers", func(p *extprocv3.ExternalProcessor) {
			p.ProcessingMode = &extprocv3.ProcessingMode{ResponseBodyMode: extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED}
		}, "processing_mode: If the ext_proc filter has the response_body_mode set to FULL_DUPLEX_STREAMED, then the response_trailer_mode has to be set to SEND"},
		{"full duplex request without trailers", func(p *extprocv3.ExternalProcessor) {
			p.ProcessingMode = &extprocv3.ProcessingMode{RequestBodyMode: extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED}
		}, "processing_mode: If the ext_proc filter has the request_body_mode set to FULL_DUPLEX_STREAMED, then the request_trailer_mode has to be set to SEND"},
		{"full duplex failure mode allow", func(p *extprocv3.ExternalProcessor) {
			p.ProcessingMode = &extprocv3.ProcessingMode{RequestBodyMode: extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED, RequestTrailerMode: extprocv3.ProcessingMode_SEND}
			p.FailureModeAllow = true
		}, "failure_mode_allow: If the ext_proc filter has either the request_body_mode or the response_body_mode set to FULL_DUPLEX_STREAMED, then the failure_mode_allow has to be left as false"},
		{"all routing", func(p *extprocv3.ExternalProcessor) {
			p.MutationRules = &mutationrulesv3.HeaderMutationRules{AllowAllRouting: wrapperspb.Bool(true)}
		}, "mutation_rules.allow_all_routing: only false"},
		{"bad regex", func(p *extprocv3.ExternalProcessor) {
			p.MutationRules = &mutationrulesv3.HeaderMutationRules{AllowExpression: &matcherv3.RegexMatcher{Regex: "("}}
		}, "mutation_rules.allow_expression.regex: "},
		{"zero timeout", func(p *extprocv3.ExternalProcessor) { p.MessageTimeout = durationpb.New(0) }, "message_timeout: must be greater than 0"},
		{"route cache", func(p *extprocv3.ExternalProcessor) {
			p.DisableClearRouteCache = true
			p.RouteCacheAction = extprocv3.ExternalProcessor_CLEAR
		}, "disable_clear_route_cache: disable_clear_route_cache and route_cache_action"},
		{"bad target", func(p *extprocv3.ExternalProcessor) { p.GrpcService = processorAt("") }, "grpc_service.google_grpc.target_uri: must be set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.edit(p)
			_, err := Factory{}.Compile(p, testContext())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	c, err := Factory{}.Compile(valid(), testContext())
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.(*config); cfg.messageTimeout != defaultMessageTimeout || cfg.mode != defaultMode || !cfg.emitClientSpan {
		t.Errorf("defaults: timeout %v mode %+v emit_client_span %v", cfg.messageTimeout, cfg.mode, cfg.emitClientSpan)
	}
	_ = c.(*config).Close()
}

func TestCompileRouteRefusesWithPath(t *testing.T) {
	for o, want := range map[*extprocv3.ExtProcOverrides]string{
		{GrpcInitialMetadata: []*corev3.HeaderValue{{Value: "v"}}}: "overrides.grpc_initial_metadata[0].key: must not be empty",
		{RequestAttributes: []string{"request.("}}:                 "overrides.request_attributes[0]: ",
		{AsyncMode: true}: "overrides.async_mode: not supported by Outrigger: deprecated and not implemented in Envoy",
		{MetadataOptions: &extprocv3.MetadataOptions{ClusterMetadataForwardingNamespaces: &extprocv3.MetadataOptions_MetadataNamespaces{}}}: "overrides.metadata_options.cluster_metadata_forwarding_namespaces: not supported",
	} {
		p := &extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Overrides{Overrides: o}}
		if _, err := (Factory{}).CompileRoute(p, testContext()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	p := &extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Overrides{Overrides: &extprocv3.ExtProcOverrides{
		ProcessingMode: &extprocv3.ProcessingMode{RequestBodyMode: extprocv3.ProcessingMode_GRPC},
	}}}
	if _, err := (Factory{}).CompileRoute(p, testContext()); err == nil || !strings.Contains(err.Error(), "overrides.processing_mode.request_body_mode: GRPC is not supported") {
		t.Fatalf("error %v", err)
	}
}

func TestApplyHeaderMutationActions(t *testing.T) {
	opt := func(k, v string, a corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
		return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}, AppendAction: a}
	}
	h := httpfiltertest.NewHeaders("x-keep", "1", "x-add", "a", "x-over", "o", "x-gone", "g", "x-envoy-x", "e")
	m := &extprocsvc.HeaderMutation{
		SetHeaders: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x-add", Value: "b"}, Append: wrapperspb.Bool(true)},
			opt("x-keep", "2", corev3.HeaderValueOption_ADD_IF_ABSENT),
			opt("x-new", "n", corev3.HeaderValueOption_ADD_IF_ABSENT),
			opt("x-over", "p", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS),
			opt("x-none", "q", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS),
			opt("X-Set", "s", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
			opt("x-envoy-x", "changed", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
			// The connection manager frames bodies: accepted, no effect.
			opt("content-length", "12", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
		},
		RemoveHeaders: []string{"x-gone", "host"},
	}
	r, _ := mutationrules.Compile(nil)
	rejected := stats.NewStore().Counter("rejected")
	if err := applyHeaderMutation(m, head{h: h}, r, rejected); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"x-keep": "1", "x-add": "a,b", "x-new": "n", "x-over": "p", "x-set": "s", "x-envoy-x": "e"} {
		if got, _ := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"x-gone", "x-none", "content-length"} {
		if _, ok := h.Get(name); ok {
			t.Errorf("%s present", name)
		}
	}
	if rejected.Value() != 2 {
		t.Errorf("rejected %d, want 2 (host removal, x-envoy-x)", rejected.Value())
	}
	bad := &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{opt("bad name", "v", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD)}}
	if err := applyHeaderMutation(bad, head{h: h}, r, rejected); err == nil || detailsOf(err.Error()) != "Invalid_character_in_set_headers_mutation." {
		t.Errorf("error %v", err)
	}
}

func TestReplacer(t *testing.T) {
	cases := []struct {
		name   string
		r      replacer
		pieces []string
		want   string
	}{
		{"whole body", replacer{body: []byte("new"), n: -1}, []string{"ab", "cd"}, "new"},
		{"first bytes", replacer{body: []byte("NEW"), n: 3}, []string{"ab", "cd", "ef"}, "NEWdef"},
		{"empty prefix", replacer{body: []byte("NEW"), n: 0}, []string{"ab"}, "NEWab"},
		{"cleared", replacer{n: 4}, []string{"abcd", "e"}, "e"},
		{"no body", replacer{body: []byte("NEW"), n: -1}, nil, "NEW"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out []byte
			for _, p := range tc.pieces {
				b, _ := tc.r.DecodeData([]byte(p))
				out = append(out, b...)
			}
			b, _ := tc.r.DecodeEnd()
			if got := string(append(out, b...)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
