package extauthz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/authzservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// fakeServices opens real (lazy) channels and dials clusters by address.
type fakeServices struct {
	clusters map[string]string
}

func (f fakeServices) OpenGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
	return grpcservice.Open(gs, grpcservice.Context{Cluster: func(name string) grpcservice.Cluster {
		if c := f.Cluster(name); c != nil {
			return c
		}
		return nil
	}})
}

func (f fakeServices) Cluster(name string) grpcservice.Cluster {
	addr, ok := f.clusters[name]
	if !ok {
		return nil
	}
	return dialer(addr)
}

// dialer is a cluster of one address.
type dialer = grpcservicetest.Dialer

// fakeChecker answers every check with resp (after blocking until the
// context ends when hang), and keeps the requests.
type fakeChecker struct {
	mu   sync.Mutex
	reqs []*authv3.CheckRequest
	resp *response
	hang bool
}

func (f *fakeChecker) check(ctx context.Context, req *authv3.CheckRequest, _ []string) *response {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.hang {
		<-ctx.Done()
		return errorResponse(ctx.Err().Error())
	}
	return f.resp
}

func (f *fakeChecker) Close() error { return nil }

// testContext is a filter context with a fresh store.
func testContext() httpfilter.Context {
	return httpfilter.Context{
		Name:       "envoy.filters.http.ext_authz",
		Stats:      stats.NewStore(),
		StatPrefix: "http.in.",
		Log:        logr.Discard(),
		Runtime:    noRuntime{},
		Now:        time.Now,
		Services:   fakeServices{clusters: map[string]string{"authz": "127.0.0.1:1"}},
	}
}

type noRuntime struct{}

func (noRuntime) Uint64(_ string, def uint64) uint64 { return def }

// parse reads an ExtAuthz from YAML-ish JSON.
func parse(t *testing.T, js string) *extauthzv3.ExtAuthz {
	t.Helper()
	p := &extauthzv3.ExtAuthz{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	return p
}

const grpcService = `"grpc_service": {"envoy_grpc": {"cluster_name": "authz"}}`

func TestCompileRefuses(t *testing.T) {
	tests := map[string]struct{ config, want string }{
		"no service":                    {`{}`, "services: one of grpc_service or http_service is required"},
		"unknown cluster":               {`{"grpc_service": {"envoy_grpc": {"cluster_name": "nope"}}}`, "grpc_service.envoy_grpc.cluster_name: unknown gRPC client cluster 'nope'"},
		"V2":                            {`{` + grpcService + `, "transport_api_version": "V2"}`, "transport_api_version: V2 is not supported"},
		"filter_enabled_metadata":       {`{` + grpcService + `, "filter_enabled_metadata": {"filter": "x"}}`, "filter_enabled_metadata."},
		"bad allowed header regex":      {`{` + grpcService + `, "allowed_headers": {"patterns": [{"safe_regex": {"regex": "("}}]}}`, "allowed_headers.patterns[0].safe_regex"},
		"http without cluster":          {`{"http_service": {"server_uri": {"uri": "http://a", "timeout": "1s"}}}`, "http_service.server_uri.cluster: must be set"},
		"http path_prefix":              {`{"http_service": {"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}, "path_prefix": "auth"}}`, `http_service.path_prefix: should start with "/"`},
		"path_override and path_prefix": {`{"http_service": {"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}, "path_prefix": "/a", "path_override": "/b"}}`, "http_service.path_override: only one of path_prefix or path_override"},
		"relative path_override":        {`{"http_service": {"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}, "path_override": "b"}}`, `http_service.path_override: should start with "/"`},
		"http retry_on":                 {`{"http_service": {"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}, "retry_policy": {"retry_on": "5xx"}}}`, "http_service.retry_policy.retry_on: not supported by Outrigger for the HTTP service"},
		"allowed_headers twice":         {`{"allowed_headers": {"patterns": [{"exact": "a"}]}, "http_service": {"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}, "authorization_request": {"allowed_headers": {"patterns": [{"exact": "b"}]}}}}`, "allowed_headers: invalid duplicate configuration"},
		"http headers_to_add %":         {`{"http_service": {"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}, "authorization_request": {"headers_to_add": [{"key": "a", "value": "%NOPE%"}]}}}`, "headers_to_add[0].value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(parse(t, tc.config), testContext())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCompileRouteRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		config *extauthzv3.ExtAuthzPerRoute
		want   string
	}{
		"grpc override, unknown cluster": {checkSettings(&extauthzv3.CheckSettings{
			ServiceOverride: &extauthzv3.CheckSettings_GrpcService{GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "nope"}}}},
		}), "check_settings.grpc_service.envoy_grpc.cluster_name: unknown gRPC client cluster 'nope'"},
		"http override without cluster": {checkSettings(&extauthzv3.CheckSettings{
			ServiceOverride: &extauthzv3.CheckSettings_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{Uri: "http://a"}}},
		}), "check_settings.http_service.server_uri.cluster: must be set"},
		"http override allowed_headers": {checkSettings(&extauthzv3.CheckSettings{
			ServiceOverride: &extauthzv3.CheckSettings_HttpService{HttpService: &extauthzv3.HttpService{
				ServerUri: &corev3.HttpUri{Uri: "http://a", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "authz"}},
				//lint:ignore SA1019 the deprecated field is what the case refuses.
				AuthorizationRequest: &extauthzv3.AuthorizationRequest{AllowedHeaders: &matcherv3.ListStringMatcher{}},
			}},
		}), "check_settings.http_service.authorization_request.allowed_headers: not supported in a per-route override"},
		"both body settings": {&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: &extauthzv3.CheckSettings{
			DisableRequestBodyBuffering: true, WithRequestBody: &extauthzv3.BufferSettings{MaxRequestBytes: 1},
		}}}, "Only one of disable_request_body_buffering or with_request_body"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.CompileRoute(tc.config, testContext())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// newTest compiles config with a fake checker answering resp.
func newTest(t *testing.T, js string, resp *response) (*config, *fakeChecker, httpfilter.Context) {
	t.Helper()
	ctx := testContext()
	cfg, err := Factory{}.Compile(parse(t, js), ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*config)
	_ = c.client.Close()
	fc := &fakeChecker{resp: resp}
	c.client = fc
	return c, fc, ctx
}

// routed is a stream for a request that matched a route to cluster "up".
func routed(method, path string, headers ...string) *httpfiltertest.Stream {
	s := httpfiltertest.NewStream(method, path, headers...)
	s.Matched = &router.Route{}
	s.Cluster = "up"
	s.StreamInfo = httpfilter.StreamInfo{RemoteAddress: "10.0.0.1:5555", LocalAddress: "127.0.0.1:8080", Protocol: "HTTP/1.1", Start: time.Unix(1700000000, 0), ContentLength: -1}
	return s
}

// run runs the filter's decode and encode steps on s.
func run(c *config, s *httpfiltertest.Stream) httpfilter.Status {
	f := c.NewFilter()
	st := f.(httpfilter.Decoder).DecodeHeaders(s)
	f.(httpfilter.Encoder).EncodeHeaders(s)
	f.(httpfilter.Destroyer).OnDestroy()
	return st
}

func counter(ctx httpfilter.Context, name string) uint64 { return ctx.Stats.Counter(name).Value() }

func TestAllowed(t *testing.T) {
	c, _, ctx := newTest(t, `{`+grpcService+`, "clear_route_cache": true}`, &response{
		status: statusOK,
		requestHeaders: []headerEdit{
			{name: "x-set", value: "new", action: actionSet},
			{name: "x-add", value: "2", action: actionAdd},
			{name: "x-append", value: "b", action: actionAppend},
			{name: "x-absent", value: "v", action: actionAddIfAbsent},
			{name: "x-only-if", value: "v", action: actionOverwriteIfExists},
			{name: ":path", value: "/evil", action: actionSet},
		},
		headersToRemove: []string{"X-Gone", "host"},
		responseHeaders: []headerEdit{{name: "x-resp", value: "r", action: actionAdd}},
		queryToSet:      [][2]string{{"b", "2"}},
		queryToRemove:   []string{"drop"},
	})
	s := routed("GET", "/p?drop=1&a=1", "x-set", "old", "x-add", "1", "x-append", "a", "x-gone", "g", "host", "h")
	if got := run(c, s); got != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("status %v, reply %+v", got, s.Reply)
	}
	h := s.ReqHeaders
	for name, want := range map[string]string{"x-set": "new", "x-add": "1,2", "x-append": "a,b", "x-absent": "v", "host": "h"} {
		if v, _ := h.Get(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
	for _, name := range []string{"x-gone", "x-only-if", ":path"} {
		if v, ok := h.Get(name); ok {
			t.Errorf("%s = %q, want none", name, v)
		}
	}
	if s.Req.Path != "/p?a=1&b=2" {
		t.Errorf("path %q", s.Req.Path)
	}
	if s.RouteCleared != 1 {
		t.Errorf("route cache cleared %d times", s.RouteCleared)
	}
	if v, _ := s.RespHeaders.Get("x-resp"); v != "r" {
		t.Errorf("x-resp = %q", v)
	}
	if counter(ctx, "http.in.ext_authz.ok") != 1 || counter(ctx, "cluster.up.ext_authz.ok") != 1 {
		t.Error("ok not counted")
	}
}

func TestDenied(t *testing.T) {
	c, _, ctx := newTest(t, `{`+grpcService+`, "stat_prefix": "front", "max_denied_response_body_bytes": 4}`, &response{
		status: statusDenied, httpStatus: 401, body: "go away",
		localHeaders: []headerEdit{{name: "content-type", value: "application/json"}, {name: "set-cookie", value: "a"}, {name: "set-cookie", value: "b"}},
	})
	s := routed("GET", "/")
	if got := run(c, s); got != httpfilter.Stop {
		t.Fatalf("status %v", got)
	}
	want := &httpfiltertest.LocalReply{Status: 401, Body: "go a", Flags: accesslog.UnauthorizedExternalService, Details: "ext_authz_denied"}
	if diff := cmp.Diff(want, s.Reply); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	if v, _ := s.RespHeaders.Get("set-cookie"); v != "a,b" {
		t.Errorf("set-cookie %q", v)
	}
	if counter(ctx, "http.in.ext_authz.front.denied") != 1 || counter(ctx, "cluster.up.ext_authz.front.denied") != 1 {
		t.Error("denied not counted under the stat prefix")
	}
	// charge_cluster_response_stats (default true): the denial is the
	// route cluster's response, an internal one.
	for _, name := range []string{"upstream_rq_completed", "upstream_rq_4xx", "upstream_rq_401", "internal.upstream_rq_4xx", "internal.upstream_rq_401"} {
		if got := counter(ctx, "cluster.up."+name); got != 1 {
			t.Errorf("cluster.up.%s = %d, want 1", name, got)
		}
	}
}

func TestDeniedNotCharged(t *testing.T) {
	c, _, ctx := newTest(t, `{`+grpcService+`, "charge_cluster_response_stats": false}`, &response{status: statusDenied, httpStatus: 401})
	if got := run(c, routed("GET", "/")); got != httpfilter.Stop {
		t.Fatalf("status %v", got)
	}
	if counter(ctx, "cluster.up.ext_authz.denied") != 1 {
		t.Error("denial not counted")
	}
	for _, name := range []string{"upstream_rq_completed", "upstream_rq_4xx", "upstream_rq_401", "internal.upstream_rq_401"} {
		if got := counter(ctx, "cluster.up."+name); got != 0 {
			t.Errorf("cluster.up.%s = %d, want 0 with charge_cluster_response_stats false", name, got)
		}
	}
}

func TestErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		config     string
		resp       *response
		wantStatus httpfilter.Status
		wantReply  int
		wantHeader bool
	}{
		"status_on_error":            {`{` + grpcService + `, "status_on_error": {"code": 503}}`, errorResponse("x"), httpfilter.Stop, 503, false},
		"default 403":                {`{` + grpcService + `}`, errorResponse("x"), httpfilter.Stop, 403, false},
		"error_response's status":    {`{` + grpcService + `}`, &response{status: statusError, httpStatus: 502}, httpfilter.Stop, 502, false},
		"failure_mode_allow":         {`{` + grpcService + `, "failure_mode_allow": true}`, errorResponse("x"), httpfilter.Continue, 0, false},
		"failure_mode_allow, header": {`{` + grpcService + `, "failure_mode_allow": true, "failure_mode_allow_header_add": true}`, errorResponse("x"), httpfilter.Continue, 0, true},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, ctx := newTest(t, tc.config, tc.resp)
			s := routed("GET", "/")
			if got := run(c, s); got != tc.wantStatus {
				t.Fatalf("status %v", got)
			}
			if tc.wantReply != 0 {
				if s.Reply == nil || s.Reply.Status != tc.wantReply || s.Reply.Details != "ext_authz_error" || s.Flags != accesslog.UnauthorizedExternalService {
					t.Errorf("reply %+v", s.Reply)
				}
			} else if counter(ctx, "http.in.ext_authz.failure_mode_allowed") != 1 {
				t.Error("failure_mode_allowed not counted")
			}
			if _, ok := s.ReqHeaders.Get("x-envoy-auth-failure-mode-allowed"); ok != tc.wantHeader {
				t.Errorf("failure mode header present: %v", ok)
			}
			if counter(ctx, "http.in.ext_authz.error") != 1 {
				t.Error("error not counted")
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	c, fc, ctx := newTest(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "authz"}, "timeout": "0.02s"}}`, nil)
	fc.hang = true
	s := routed("GET", "/")
	if got := run(c, s); got != httpfilter.Stop || s.Reply.Status != 403 {
		t.Fatalf("status %v reply %+v", got, s.Reply)
	}
	if counter(ctx, "http.in.ext_authz.error") != 1 {
		t.Error("timeout not counted as an error")
	}
	// A client gone while waiting: nothing answered by the filter.
	s = routed("GET", "/")
	s.CutWait = true
	if got := run(c, s); got != httpfilter.Stop || s.Reply != nil {
		t.Errorf("status %v reply %+v", got, s.Reply)
	}
}

func TestSkipped(t *testing.T) {
	c, fc, ctx := newTest(t, `{`+grpcService+`}`, &response{status: statusOK})
	// Without a route, Envoy does not check.
	s := httpfiltertest.NewStream("GET", "/")
	if run(c, s) != httpfilter.Continue || len(fc.reqs) != 0 {
		t.Error("an unrouted request was checked")
	}
	// A route that disables the filter.
	s = routed("GET", "/")
	s.PerRoute = map[string][]httpfilter.RouteConfig{ctx.Name: {
		mustRoute(t, &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}),
	}}
	if run(c, s) != httpfilter.Continue || len(fc.reqs) != 0 {
		t.Error("a disabled route was checked")
	}

	// filter_enabled at 0%: counted as disabled, denied with deny_at_disable.
	c, fc, ctx = newTest(t, `{`+grpcService+`, "filter_enabled": {"default_value": {"numerator": 0}}}`, &response{status: statusOK})
	if run(c, routed("GET", "/")) != httpfilter.Continue || len(fc.reqs) != 0 || counter(ctx, "http.in.ext_authz.disabled") != 1 {
		t.Error("a disabled filter checked, or did not count")
	}
	c, _, _ = newTest(t, `{`+grpcService+`, "status_on_error": {"code": 500}, "filter_enabled": {"default_value": {"numerator": 0}}, "deny_at_disable": {"default_value": true}}`, &response{status: statusOK})
	s = routed("GET", "/")
	if run(c, s) != httpfilter.Stop || s.Reply.Status != 500 || s.Reply.Details != "ext_authz_error" {
		t.Errorf("deny_at_disable: %+v", s.Reply)
	}

	// filter_enabled_metadata: only requests whose dynamic metadata
	// matches are checked; the others count as disabled.
	c, fc, ctx = newTest(t, `{`+grpcService+`, "filter_enabled_metadata": {"filter": "envoy.filters.http.jwt_authn", "path": [{"key": "tier"}], "value": {"string_match": {"exact": "gold"}}}}`, &response{status: statusOK})
	gold, _ := structpb.NewStruct(map[string]any{"tier": "gold"})
	s = routed("GET", "/")
	s.SetDynamicMetadata("envoy.filters.http.jwt_authn", gold)
	if run(c, s) != httpfilter.Continue || len(fc.reqs) != 1 {
		t.Errorf("a request with matching metadata was not checked (%d checks)", len(fc.reqs))
	}
	if run(c, routed("GET", "/")) != httpfilter.Continue || len(fc.reqs) != 1 || counter(ctx, "http.in.ext_authz.disabled") != 1 {
		t.Errorf("a request without the metadata was checked or not counted as disabled (%d checks)", len(fc.reqs))
	}
}

func mustRoute(t *testing.T, p *extauthzv3.ExtAuthzPerRoute) httpfilter.RouteConfig {
	t.Helper()
	rc, err := Factory{}.CompileRoute(p, testContext())
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func checkSettings(cs *extauthzv3.CheckSettings) *extauthzv3.ExtAuthzPerRoute {
	return &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: cs}}
}

func TestCheckRequest(t *testing.T) {
	c, fc, ctx := newTest(t, `{`+grpcService+`, "disallowed_headers": {"patterns": [{"exact": "cookie"}]}, "with_request_body": {"max_request_bytes": 4, "allow_partial_message": true, "pack_as_bytes": true},
		"metadata_context_namespaces": ["envoy.filters.http.rbac", "absent"], "route_metadata_context_namespaces": ["team", "absent"]}`, &response{status: statusOK})
	s := routed("POST", "/a?b", "host", "example", "x-dup", "1", "x-dup", "2", "cookie", "secret",
		"x-envoy-auth-partial-body", "spoofed", "x-envoy-downstream-service-cluster", "frontend")
	s.Body = []byte("0123456789")
	rbacMD, _ := structpb.NewStruct(map[string]any{"shadow_engine_result": "denied"})
	otherMD, _ := structpb.NewStruct(map[string]any{"x": "y"})
	s.SetDynamicMetadata("envoy.filters.http.rbac", rbacMD)
	s.SetDynamicMetadata("other", otherMD)
	teamMD, _ := structpb.NewStruct(map[string]any{"owner": "payments"})
	s.Matched = &router.Route{Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"team": teamMD, "other": otherMD}}}
	s.StreamInfo.BytesReceived = 10
	s.StreamInfo.ContentLength = 10
	s.PerRoute = map[string][]httpfilter.RouteConfig{ctx.Name: {
		mustRoute(t, checkSettings(&extauthzv3.CheckSettings{ContextExtensions: map[string]string{"a": "vh", "b": "vh"}})),
		mustRoute(t, checkSettings(&extauthzv3.CheckSettings{ContextExtensions: map[string]string{"b": "route"}})),
	}}
	if run(c, s) != httpfilter.Continue {
		t.Fatal("not allowed")
	}
	got := fc.reqs[0].GetAttributes()
	hr := got.GetRequest().GetHttp()
	if hr.GetId() == "" {
		t.Error("no id")
	}
	hr.Id = ""
	want := &authv3.AttributeContext{
		Source:      &authv3.AttributeContext_Peer{Address: authzservice.SocketAddress("10.0.0.1:5555"), Service: "frontend"},
		Destination: &authv3.AttributeContext_Peer{Address: authzservice.SocketAddress("127.0.0.1:8080")},
		Request: &authv3.AttributeContext_Request{
			Time: got.GetRequest().GetTime(),
			Http: &authv3.AttributeContext_HttpRequest{
				Method: "POST", Path: "/a?b", Host: "host", Scheme: "http", Protocol: "HTTP/1.1", Size: 10,
				Headers: map[string]string{
					":authority": "host", ":path": "/a?b", ":method": "POST", ":scheme": "http",
					"x-dup": "1,2", "x-envoy-downstream-service-cluster": "frontend", "x-envoy-auth-partial-body": "true",
					"content-length": "10",
				},
				RawBody: []byte("0123"),
			},
		},
		ContextExtensions: map[string]string{"a": "vh", "b": "route"},
		MetadataContext:   &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.filters.http.rbac": rbacMD}},
		// route_metadata_context_namespaces: the route's listed namespaces.
		RouteMetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"team": teamMD}},
	}
	if diff := cmp.Diff(protojson.Format(want), protojson.Format(got)); diff != "" {
		t.Errorf("CheckRequest (-want +got):\n%s", diff)
	}
	if !got.GetRequest().GetTime().AsTime().Equal(time.Unix(1700000000, 0)) {
		t.Errorf("time %v", got.GetRequest().GetTime().AsTime())
	}
	if len(s.Buffered) != 1 || s.Buffered[0] != 4 {
		t.Errorf("buffered with limits %v", s.Buffered)
	}

	// A route that turns buffering off.
	s = routed("POST", "/")
	s.Body = []byte("0123456789")
	s.PerRoute = map[string][]httpfilter.RouteConfig{ctx.Name: {mustRoute(t, checkSettings(&extauthzv3.CheckSettings{DisableRequestBodyBuffering: true}))}}
	run(c, s)
	if len(s.Buffered) != 0 || fc.reqs[1].GetAttributes().GetRequest().GetHttp().GetRawBody() != nil {
		t.Error("the body was buffered on a route that disables it")
	}
}

func TestCheckRequestRawHeadersAndAllowList(t *testing.T) {
	c, fc, _ := newTest(t, `{`+grpcService+`, "encode_raw_headers": true, "allowed_headers": {"patterns": [{"prefix": "x-"}, {"exact": ":path"}]}, "with_request_body": {"max_request_bytes": 100}}`, &response{status: statusOK})
	s := routed("POST", "/", "x-a", "1", "x-a", "2", "other", "o")
	s.Body = []byte("caf\xe9")
	run(c, s)
	hr := fc.reqs[0].GetAttributes().GetRequest().GetHttp()
	var got []string
	for _, h := range hr.GetHeaderMap().GetHeaders() {
		got = append(got, h.GetKey()+"="+string(h.GetRawValue()))
	}
	if diff := cmp.Diff([]string{":path=/", "x-a=1", "x-a=2", "x-envoy-auth-partial-body=false"}, got); diff != "" {
		t.Errorf("header_map (-want +got):\n%s", diff)
	}
	if hr.GetHeaders() != nil || hr.GetBody() != "caf!" {
		t.Errorf("headers %v body %q", hr.GetHeaders(), hr.GetBody())
	}
}

func TestBodyTooLarge(t *testing.T) {
	c, fc, _ := newTest(t, `{`+grpcService+`, "with_request_body": {"max_request_bytes": 4}}`, &response{status: statusOK})
	s := routed("POST", "/")
	s.Body = []byte("0123456789")
	if run(c, s) != httpfilter.Stop || s.Reply.Status != 413 || len(fc.reqs) != 0 {
		t.Errorf("reply %+v, %d checks", s.Reply, len(fc.reqs))
	}
}

func TestEditQuery(t *testing.T) {
	for _, tc := range []struct {
		path        string
		set         [][2]string
		remove      []string
		want        string
		wantChanged bool
	}{
		{"/p", nil, nil, "/p", false},
		{"/p", [][2]string{{"a", "1"}}, nil, "/p?a=1", true},
		{"/p?z=9&a=1&a=2", [][2]string{{"m", "x"}}, nil, "/p?a=1&m=x&z=9", true},
		{"/p?a=1", nil, []string{"a"}, "/p", true},
		{"/p?flag&b=2", [][2]string{{"b", "3"}}, []string{"none"}, "/p?b=3&flag=", true},
	} {
		got, changed := editQuery(tc.path, tc.set, tc.remove)
		if got != tc.want || changed != tc.wantChanged {
			t.Errorf("editQuery(%q, %v, %v) = %q, %v; want %q, %v", tc.path, tc.set, tc.remove, got, changed, tc.want, tc.wantChanged)
		}
	}
}

func TestEditsOf(t *testing.T) {
	opts := []*corev3.HeaderValueOption{
		{Header: &corev3.HeaderValue{Key: "A", Value: "1"}},
		{Header: &corev3.HeaderValue{Key: "b", Value: "2"}, Append: wrapperspb.Bool(true)},
		{Header: &corev3.HeaderValue{Key: "c", Value: "3"}, Append: wrapperspb.Bool(false)},
		{Header: &corev3.HeaderValue{Key: "d", RawValue: []byte("4")}, AppendAction: corev3.HeaderValueOption_ADD_IF_ABSENT},
		{Header: &corev3.HeaderValue{Key: "e", Value: "5"}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD},
		{Header: &corev3.HeaderValue{Key: "f", Value: "6"}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS},
	}
	want := []headerEdit{
		{"a", "1", actionAdd}, {"b", "2", actionAppend}, {"c", "3", actionSet},
		{"d", "4", actionAddIfAbsent}, {"e", "5", actionSet}, {"f", "6", actionOverwriteIfExists},
	}
	if diff := cmp.Diff(want, editsOf(opts), cmp.AllowUnexported(headerEdit{})); diff != "" {
		t.Errorf("edits (-want +got):\n%s", diff)
	}
}

// authzGRPC is a gRPC Authorization server answering resp or err.
type authzGRPC struct {
	authv3.UnimplementedAuthorizationServer
	resp *authv3.CheckResponse
	err  error
}

func (a *authzGRPC) Check(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	return a.resp, a.err
}

func TestGRPCClient(t *testing.T) {
	//lint:ignore SA1019 the deprecated field is what a case checks
	deprecatedOK := &authv3.OkHttpResponse{DynamicMetadata: mdStruct(t, map[string]any{"user": "inner"})}
	deny := &authv3.CheckResponse{
		Status: statusOf(7),
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}, Body: "no",
			Headers: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-why", Value: "because"}}},
		}},
	}
	for name, tc := range map[string]struct {
		srv  *authzGRPC
		want *response
	}{
		"ok": {&authzGRPC{resp: &authv3.CheckResponse{Status: statusOf(0), HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
			Headers:                 []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-u", Value: "v"}}},
			HeadersToRemove:         []string{"x-r"},
			QueryParametersToSet:    []*corev3.QueryParameter{{Key: "q", Value: "1"}},
			QueryParametersToRemove: []string{"z"},
		}}}}, &response{status: statusOK, requestHeaders: []headerEdit{{"x-u", "v", actionAdd}}, headersToRemove: []string{"x-r"}, responseHeaders: []headerEdit{}, queryToSet: [][2]string{{"q", "1"}}, queryToRemove: []string{"z"}}},
		"denied":          {&authzGRPC{resp: deny}, &response{status: statusDenied, httpStatus: 401, body: "no", localHeaders: []headerEdit{{"x-why", "because", actionAdd}}}},
		"denied, no body": {&authzGRPC{resp: &authv3.CheckResponse{Status: statusOf(7)}}, &response{status: statusDenied, httpStatus: 403}},
		"error_response": {&authzGRPC{resp: &authv3.CheckResponse{Status: statusOf(13), HttpResponse: &authv3.CheckResponse_ErrorResponse{ErrorResponse: &authv3.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode_BadGateway}, Body: "down",
		}}}}, &response{status: statusError, httpStatus: 502, body: "down", localHeaders: []headerEdit{}, reason: "error_response"}},
		"call fails": {&authzGRPC{err: errors.New("boom")}, nil},
		"dynamic metadata": {&authzGRPC{resp: &authv3.CheckResponse{Status: statusOf(7), DynamicMetadata: mdStruct(t, map[string]any{"user": "eve"})}},
			&response{status: statusDenied, httpStatus: 403, dynamicMetadata: mdStruct(t, map[string]any{"user": "eve"})}},
		"deprecated ok metadata wins": {&authzGRPC{resp: &authv3.CheckResponse{Status: statusOf(0), DynamicMetadata: mdStruct(t, map[string]any{"user": "outer"}),
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: deprecatedOK}}},
			&response{status: statusOK, requestHeaders: []headerEdit{}, responseHeaders: []headerEdit{}, dynamicMetadata: mdStruct(t, map[string]any{"user": "inner"})}},
	} {
		t.Run(name, func(t *testing.T) {
			addr := serveGRPC(t, tc.srv)
			ctx := testContext()
			ctx.Services = fakeServices{clusters: map[string]string{"authz": addr}}
			cfg, err := Factory{}.Compile(parse(t, `{`+grpcService+`}`), ctx)
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.(*config)
			defer c.Close()
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got := c.client.check(cctx, &authv3.CheckRequest{}, nil)
			if tc.want == nil {
				if got.status != statusError || !strings.Contains(got.reason, "boom") {
					t.Errorf("got %+v, want an error", got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(response{}, headerEdit{}, httpAnswer{}), protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func mdStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	st, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDynamicMetadataIngestion checks that an answer's dynamic metadata
// becomes the filter's, with ext_authz_duration on an allowed request, and
// is counted and dropped without enable_dynamic_metadata_ingestion.
func TestDynamicMetadataIngestion(t *testing.T) {
	c, _, _ := newTest(t, `{`+grpcService+`}`, &response{status: statusOK, dynamicMetadata: mdStruct(t, map[string]any{"user": "bob"})})
	s := routed("GET", "/")
	if run(c, s) != httpfilter.Continue {
		t.Fatal("not allowed")
	}
	got := s.DynamicMetadata().GetFilterMetadata()["envoy.filters.http.ext_authz"].AsMap()
	if got["user"] != "bob" {
		t.Errorf("metadata %v", got)
	}
	if d, ok := got["ext_authz_duration"].(float64); !ok || d < 0 {
		t.Errorf("ext_authz_duration %v", got["ext_authz_duration"])
	}

	c, _, _ = newTest(t, `{`+grpcService+`}`, &response{status: statusDenied, dynamicMetadata: mdStruct(t, map[string]any{"user": "eve"})})
	s = routed("GET", "/")
	run(c, s)
	got = s.DynamicMetadata().GetFilterMetadata()["envoy.filters.http.ext_authz"].AsMap()
	if diff := cmp.Diff(map[string]any{"user": "eve"}, got); diff != "" {
		t.Errorf("denied request's metadata (-want +got):\n%s", diff)
	}

	c, _, ctx := newTest(t, `{`+grpcService+`, "enable_dynamic_metadata_ingestion": false}`, &response{status: statusOK, dynamicMetadata: mdStruct(t, map[string]any{"user": "bob"})})
	s = routed("GET", "/")
	run(c, s)
	if md := s.DynamicMetadata().GetFilterMetadata()["envoy.filters.http.ext_authz"]; md != nil {
		t.Errorf("metadata kept without ingestion: %v", md)
	}
	if counter(ctx, "http.in.ext_authz.ignored_dynamic_metadata") != 1 {
		t.Error("ignored_dynamic_metadata not counted")
	}
}

func TestHTTPClient(t *testing.T) {
	var (
		mu   sync.Mutex
		seen *http.Request
		body string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, body = r, string(b)
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/auth/ok"):
			w.Header().Set("x-up", "u")
			w.Header().Add("x-append", "a")
			w.Header().Set("x-client", "c")
			w.Header().Set("x-other", "o")
			w.Header().Set("x-envoy-auth-headers-to-remove", "x-one, X-Two")
		case strings.HasPrefix(r.URL.Path, "/auth/deny"):
			w.Header().Set("x-deny", "d")
			w.Header().Set("x-hidden", "h")
			w.WriteHeader(401)
			_, _ = io.WriteString(w, "no")
		default:
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	ctx := testContext()
	ctx.Services = fakeServices{clusters: map[string]string{"authz": strings.TrimPrefix(srv.URL, "http://")}}
	cfg, err := Factory{}.Compile(parse(t, `{"http_service": {
		"server_uri": {"uri": "http://authz", "cluster": "authz", "timeout": "5s"},
		"path_prefix": "/auth",
		"authorization_request": {"allowed_headers": {"patterns": [{"exact": "x-allowed"}]}, "headers_to_add": [{"key": "X-Added", "value": "v"}]},
		"authorization_response": {
			"allowed_upstream_headers": {"patterns": [{"exact": "x-up"}]},
			"allowed_upstream_headers_to_append": {"patterns": [{"exact": "x-append"}]},
			"allowed_client_headers": {"patterns": [{"exact": "x-deny"}]},
			"allowed_client_headers_on_success": {"patterns": [{"exact": "x-client"}]}
		}}}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*config)
	defer c.Close()
	if c.timeout != 5*time.Second {
		t.Errorf("timeout %v", c.timeout)
	}
	check := func(method, path, reqBody string, headers map[string]string) *response {
		t.Helper()
		hr := &authv3.AttributeContext_HttpRequest{Method: method, Path: path, Host: "example", Headers: headers, Body: reqBody}
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.client.check(cctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{Http: hr}}}, nil)
	}

	got := check("PUT", "/ok/x?q=1", "data", map[string]string{
		":method": "PUT", ":path": "/ok/x?q=1", ":authority": "example", "authorization": "Bearer t",
		"x-allowed": "yes", "content-length": "99",
	})
	want := &response{
		status:          statusOK,
		requestHeaders:  []headerEdit{{"x-append", "a", actionAdd}, {"x-up", "u", actionSet}},
		headersToRemove: []string{"x-one", "x-two"},
		responseHeaders: []headerEdit{{"x-client", "c", actionAdd}},
		// The answer's status, for a span; no address (an untraced
		// check does not watch its connection).
		http: httpAnswer{status: 200},
	}
	sortEdits(got)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(response{}, headerEdit{}, httpAnswer{})); diff != "" {
		t.Errorf("allowed (-want +got):\n%s", diff)
	}
	mu.Lock()
	if seen.Method != "PUT" || seen.RequestURI != "/auth/ok/x?q=1" || seen.Host != "example" || body != "data" ||
		seen.Header.Get("Authorization") != "Bearer t" || seen.Header.Get("X-Allowed") != "yes" ||
		seen.Header.Get("X-Added") != "v" || seen.ContentLength != 4 || seen.Header.Get("User-Agent") != "" {
		t.Errorf("the service got %s %s host %s headers %v body %q", seen.Method, seen.RequestURI, seen.Host, seen.Header, body)
	}
	mu.Unlock()

	got = check("GET", "/deny", "", nil)
	if got.status != statusDenied || got.httpStatus != 401 || got.body != "no" ||
		fmt.Sprint(got.localHeaders) != fmt.Sprint([]headerEdit{{"x-deny", "d", actionSet}}) {
		t.Errorf("denied: %+v", got)
	}
	if got = check("GET", "/fail", "", nil); got.status != statusError {
		t.Errorf("a 503 is not an error: %+v", got)
	}
}

// sortEdits orders a response's edits by name (Go's header map has no
// order).
func sortEdits(r *response) {
	for _, es := range [][]headerEdit{r.requestHeaders, r.responseHeaders, r.localHeaders} {
		for i := range es {
			for j := i + 1; j < len(es); j++ {
				if es[j].name < es[i].name {
					es[i], es[j] = es[j], es[i]
				}
			}
		}
	}
}

// statusOf is a google.rpc.Status of code.
func statusOf(code int32) *status.Status { return &status.Status{Code: code} }

// serveGRPC serves srv on a loopback port until the test ends.
func serveGRPC(t *testing.T, srv authv3.AuthorizationServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	authv3.RegisterAuthorizationServer(gs, srv)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

// TestHTTPServiceHeaders checks which request headers an HTTP service
// gets: Envoy's four, plus authorization_request.allowed_headers or the
// filter's allowed_headers, less disallowed_headers.
func TestHTTPServiceHeaders(t *testing.T) {
	const uri = `"server_uri": {"uri": "http://a", "cluster": "authz", "timeout": "1s"}`
	for name, js := range map[string]string{
		"authorization_request": `{"http_service": {` + uri + `, "authorization_request": {"allowed_headers": {"patterns": [{"prefix": "x-ok"}]}}}, "disallowed_headers": {"patterns": [{"exact": "x-ok-not"}]}}`,
		"the filter's":          `{"http_service": {` + uri + `}, "allowed_headers": {"patterns": [{"prefix": "x-ok"}]}, "disallowed_headers": {"patterns": [{"exact": "x-ok-not"}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, fc, _ := newTest(t, js, &response{status: statusOK})
			run(c, routed("GET", "/p", "authorization", "a", "x-ok-1", "1", "x-ok-not", "n", "other", "o", "user-agent", "ua"))
			got := fc.reqs[0].GetAttributes().GetRequest().GetHttp().GetHeaders()
			want := map[string]string{":authority": "host", ":path": "/p", ":method": "GET", "authorization": "a", "x-ok-1": "1"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
	// Without a list, only Envoy's four.
	c, fc, _ := newTest(t, `{"http_service": {`+uri+`}}`, &response{status: statusOK})
	run(c, routed("GET", "/p", "x-ok", "1"))
	if got := fc.reqs[0].GetAttributes().GetRequest().GetHttp().GetHeaders(); len(got) != 3 {
		t.Errorf("headers %v, want the three pseudo-headers", got)
	}
}

// TestCheckRequestTLS checks what the service is told of a request on a
// TLS connection: both principals always, the client's certificate with
// include_peer_certificate and the SNI with include_tls_session.
func TestCheckRequestTLS(t *testing.T) {
	_, leaves := tlstest.Leaves(t,
		tlstest.Options{CommonName: "client", URIs: []string{"spiffe://example.org/client"}, Client: true},
		tlstest.Options{DNS: []string{"api.example.org"}})
	client, server := leaves[0], leaves[1]
	for _, include := range []bool{false, true} {
		cfg := `{` + grpcService + `}`
		if include {
			cfg = `{` + grpcService + `, "include_peer_certificate": true, "include_tls_session": true}`
		}
		c, fc, _ := newTest(t, cfg, &response{status: statusOK})
		s := routed("GET", "/")
		s.StreamInfo.TLS = &accesslog.TLSInfo{PeerCertificate: client.Cert, LocalCertificate: server.Cert}
		s.StreamInfo.RequestedServerName = "api.example.org"
		if run(c, s) != httpfilter.Continue {
			t.Fatal("not allowed")
		}
		attrs := fc.reqs[0].GetAttributes()
		if attrs.GetSource().GetPrincipal() != "spiffe://example.org/client" || attrs.GetDestination().GetPrincipal() != "api.example.org" {
			t.Errorf("include %v: principals %q, %q", include, attrs.GetSource().GetPrincipal(), attrs.GetDestination().GetPrincipal())
		}
		if got := attrs.GetSource().GetCertificate() != ""; got != include {
			t.Errorf("include %v: certificate sent %v", include, got)
		}
		if got := attrs.GetTlsSession().GetSni(); (got == "api.example.org") != include || (attrs.TlsSession != nil) != include {
			t.Errorf("include %v: tls_session %v", include, attrs.GetTlsSession())
		}
	}
}
