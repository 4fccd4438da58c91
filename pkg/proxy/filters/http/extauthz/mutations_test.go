package extauthz

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// grpcFilter compiles config (JSON after the grpc_service) against a real
// gRPC authorization server answering resp.
func grpcFilter(t *testing.T, extra string, resp *authv3.CheckResponse) (*config, httpfilter.Context) {
	t.Helper()
	ctx := testContext()
	ctx.Services = fakeServices{clusters: map[string]string{"authz": serveGRPC(t, &authzGRPC{resp: resp})}}
	cfg, err := Factory{}.Compile(parse(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "authz"}, "timeout": "5s"}`+extra+`}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*config)
	t.Cleanup(func() { _ = c.Close() })
	return c, ctx
}

func hv(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: v}}
}

func okAnswer(ok *authv3.OkHttpResponse) *authv3.CheckResponse {
	return &authv3.CheckResponse{Status: statusOf(0), HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: ok}}
}

// TestDecoderHeaderMutationRules checks that decoder_header_mutation_rules
// decide the service's request header edits: by default Envoy-internal
// and routing headers are left alone, and a refused edit with
// disallow_is_error rejects the answer with a 500, counted as invalid.
func TestDecoderHeaderMutationRules(t *testing.T) {
	answer := okAnswer(&authv3.OkHttpResponse{
		Headers:         []*corev3.HeaderValueOption{hv("x-a", "1"), hv("x-envoy-foo", "e"), hv("x-bad", "b")},
		HeadersToRemove: []string{"x-gone", "x-envoy-keep"},
	})
	c, _ := grpcFilter(t, `, "decoder_header_mutation_rules": {"disallow_expression": {"regex": "x-bad"}}`, answer)
	s := routed("GET", "/", "x-gone", "g", "x-envoy-keep", "k")
	if st := run(c, s); st != httpfilter.Continue {
		t.Fatalf("status %v reply %+v", st, s.Reply)
	}
	for name, want := range map[string]string{"x-a": "1", "x-envoy-keep": "k"} {
		if got, _ := s.RequestHeaders().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"x-envoy-foo", "x-bad", "x-gone"} {
		if v, ok := s.RequestHeaders().Get(name); ok {
			t.Errorf("%s = %q, want it absent", name, v)
		}
	}

	c, ctx := grpcFilter(t, `, "decoder_header_mutation_rules": {"disallow_expression": {"regex": "x-bad"}, "disallow_is_error": true}`, answer)
	s = routed("GET", "/")
	if st := run(c, s); st != httpfilter.Stop || s.Reply == nil || s.Reply.Status != 500 || s.Reply.Details != "ext_authz_invalid" || s.Reply.Flags != accesslog.UnauthorizedExternalService {
		t.Fatalf("status %v reply %+v, want a 500 ext_authz_invalid", st, s.Reply)
	}
	if counter(ctx, "http.in.ext_authz.invalid") != 1 || counter(ctx, "cluster.up.ext_authz.invalid") != 1 || counter(ctx, "http.in.ext_authz.ok") != 0 {
		t.Error("the rejected answer is not counted as invalid (only)")
	}
}

// TestValidateMutations checks validate_mutations: an answer with an
// invalid header name or value, an unencoded query parameter, or an
// invalid header on a denial's reply is rejected with a 500; an invalid
// name to remove is only dropped. Without it, the same answers go through.
func TestValidateMutations(t *testing.T) {
	for name, tc := range map[string]*authv3.CheckResponse{
		"header value":    okAnswer(&authv3.OkHttpResponse{Headers: []*corev3.HeaderValueOption{hv("x-a", "a\nb")}}),
		"header name":     okAnswer(&authv3.OkHttpResponse{Headers: []*corev3.HeaderValueOption{hv("x a", "v")}}),
		"response header": okAnswer(&authv3.OkHttpResponse{ResponseHeadersToAdd: []*corev3.HeaderValueOption{hv("x-r", "a\x00b")}}),
		"query parameter": okAnswer(&authv3.OkHttpResponse{QueryParametersToSet: []*corev3.QueryParameter{{Key: "q", Value: "a b"}}}),
		"denial header": {Status: statusOf(7), HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}, Headers: []*corev3.HeaderValueOption{hv("x-d", "a\rb")},
		}}},
	} {
		t.Run(name, func(t *testing.T) {
			c, ctx := grpcFilter(t, `, "validate_mutations": true`, tc)
			s := routed("GET", "/p")
			if st := run(c, s); st != httpfilter.Stop || s.Reply == nil || s.Reply.Status != 500 || s.Reply.Details != "ext_authz_invalid" {
				t.Errorf("status %v reply %+v, want a 500 ext_authz_invalid", st, s.Reply)
			}
			if counter(ctx, "http.in.ext_authz.invalid") != 1 {
				t.Error("not counted as invalid")
			}
			c, ctx = grpcFilter(t, ``, tc)
			run(c, routed("GET", "/p"))
			if counter(ctx, "http.in.ext_authz.invalid") != 0 {
				t.Error("rejected without validate_mutations")
			}
		})
	}

	c, _ := grpcFilter(t, `, "validate_mutations": true`, okAnswer(&authv3.OkHttpResponse{
		HeadersToRemove:      []string{"bad name", "x-gone"},
		QueryParametersToSet: []*corev3.QueryParameter{{Key: "q", Value: "a%20b"}},
	}))
	s := routed("GET", "/p", "x-gone", "g")
	if st := run(c, s); st != httpfilter.Continue {
		t.Fatalf("status %v reply %+v", st, s.Reply)
	}
	if _, ok := s.RequestHeaders().Get("x-gone"); ok || s.Request().Path != "/p?q=a%20b" {
		t.Errorf("x-gone kept (%v) or path %q", ok, s.Request().Path)
	}
}

// TestClearRouteCacheHeaders checks clear_route_cache_headers: only an
// edit of a listed header, or of the query, clears the route cache.
func TestClearRouteCacheHeaders(t *testing.T) {
	for name, tc := range map[string]struct {
		ok   *authv3.OkHttpResponse
		want int
	}{
		"unlisted header": {&authv3.OkHttpResponse{Headers: []*corev3.HeaderValueOption{hv("x-other", "1")}, HeadersToRemove: []string{"x-gone"}}, 0},
		"listed header":   {&authv3.OkHttpResponse{Headers: []*corev3.HeaderValueOption{hv("X-Route", "1")}}, 1},
		"listed removal":  {&authv3.OkHttpResponse{HeadersToRemove: []string{"x-route"}}, 1},
		"query":           {&authv3.OkHttpResponse{QueryParametersToRemove: []string{"q"}}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := grpcFilter(t, `, "clear_route_cache": true, "clear_route_cache_headers": ["X-Route"]`, okAnswer(tc.ok))
			s := routed("GET", "/p?q=1")
			run(c, s)
			if s.RouteCleared != tc.want {
				t.Errorf("route cache cleared %d times, want %d", s.RouteCleared, tc.want)
			}
		})
	}
}
