package ratelimit

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// services opens google_grpc channels straight to their target.
type services struct{}

func (services) OpenGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
	return grpcservice.Open(gs, grpcservice.Context{})
}

func (services) Cluster(string) grpcservice.Cluster { return nil }

// runtimeValues is a runtime with the given integer values.
type runtimeValues map[string]uint64

func (r runtimeValues) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

// fakeRLS answers every call with resp, and keeps the requests.
type fakeRLS struct {
	rlsv3.UnimplementedRateLimitServiceServer
	mu   sync.Mutex
	reqs []*rlsv3.RateLimitRequest
	resp *rlsv3.RateLimitResponse
}

func (f *fakeRLS) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return f.resp, nil
}

func (f *fakeRLS) calls() []*rlsv3.RateLimitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*rlsv3.RateLimitRequest(nil), f.reqs...)
}

// startRLS serves a fakeRLS on a loopback port for the test.
func startRLS(t *testing.T, resp *rlsv3.RateLimitResponse) (*fakeRLS, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRLS{resp: resp}
	srv := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(srv, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return f, ln.Addr().String()
}

// testContext is a filter context with a fresh store and rt.
func testContext(rt runtimeValues) httpfilter.Context {
	return httpfilter.Context{
		Name: "envoy.filters.http.ratelimit", Stats: stats.NewStore(), StatPrefix: "http.in.",
		Log: logr.Discard(), Runtime: rt, Now: time.Now, Services: services{}, ServiceCluster: "svc",
	}
}

// compileJSON compiles a RateLimit given as JSON; target is the service's
// address.
func compileJSON(t *testing.T, js, target string, rt runtimeValues) (*config, error) {
	t.Helper()
	svc := `"rate_limit_service": {"transport_api_version": "V3", "grpc_service": {"google_grpc": {"target_uri": "` + target + `", "stat_prefix": "rls"}}}`
	if !strings.Contains(js, `"timeout"`) {
		// Envoy's default of 20 ms is shorter than a first call's
		// connect on a loaded machine; a case that is about the
		// timeout sets its own.
		svc += `, "timeout": "10s"`
	}
	js = strings.ReplaceAll(js, "SERVICE", svc)
	p := &rlv3.RateLimit{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	c, err := compile(p, testContext(rt))
	if c != nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

func TestCompileRefuses(t *testing.T) {
	tests := map[string]struct{ config, want string }{
		"no domain":        {`{SERVICE}`, "domain: must be set"},
		"no service":       {`{"domain": "d"}`, "rate_limit_service: must be set"},
		"AUTO version":     {`{"domain": "d", "rate_limit_service": {"grpc_service": {"google_grpc": {"target_uri": "x", "stat_prefix": "s"}}}}`, "rate_limit_service.transport_api_version: AUTO is not supported"},
		"bad request_type": {`{"domain": "d", SERVICE, "request_type": "some"}`, `request_type: "some" is not one of`},
		"stage above 10":   {`{"domain": "d", SERVICE, "stage": 11}`, "stage: must be at most 10"},
		"own rate_limits with a stage": {`{"domain": "d", SERVICE, "rate_limits": [{"stage": 1, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].stage: not supported in a filter's own rate_limits"},
		"own rate_limits with dynamic_metadata": {`{"domain": "d", SERVICE, "rate_limits": [{"actions": [{"remote_address": {}}, {"dynamic_metadata": {"descriptor_key": "k", "metadata_key": {"key": "a", "path": [{"key": "b"}]}}}]}]}`,
			"rate_limits[0].actions[1].dynamic_metadata: not supported here"},
		"bad action": {`{"domain": "d", SERVICE, "rate_limits": [{"actions": [{"request_headers": {"descriptor_key": "k"}}]}]}`,
			"rate_limits[0].actions[0].request_headers.header_name: must be set"},
		"bad timeout": {`{"domain": "d", SERVICE, "timeout": "-1s"}`, "timeout: must be a valid, non-negative duration"},
		"own rate_limits applied on stream done": {`{"domain": "d", SERVICE, "rate_limits": [{"apply_on_stream_done": true, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].apply_on_stream_done: supported only in RateLimitPerRoute.rate_limits"},
		"hits_addend with a number and a format": {`{"domain": "d", SERVICE, "rate_limits": [{"hits_addend": {"number": 2, "format": "%BYTES_RECEIVED%"}, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].hits_addend: must contain either a format or a number"},
		"hits_addend empty": {`{"domain": "d", SERVICE, "rate_limits": [{"hits_addend": {}, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].hits_addend: must contain either a format or a number"},
		"hits_addend format of two parts": {`{"domain": "d", SERVICE, "rate_limits": [{"hits_addend": {"format": "x%BYTES_RECEIVED%"}, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].hits_addend.format: must contain exactly one substitution"},
		"hits_addend bad format": {`{"domain": "d", SERVICE, "rate_limits": [{"hits_addend": {"format": "%NOPE%"}, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].hits_addend.format: "},
		"hits_addend above the bound": {`{"domain": "d", SERVICE, "rate_limits": [{"hits_addend": {"number": 1000000001}, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].hits_addend.number: must be at most 1000000000"},
		"negative hits without a number": {`{"domain": "d", SERVICE, "rate_limits": [{"hits_addend": {"is_negative_hits": true}, "actions": [{"remote_address": {}}]}]}`,
			"rate_limits[0].hits_addend: must contain either a format or a number"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := compileJSON(t, tc.config, "127.0.0.1:1", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := compileRoute(&rlv3.RateLimitPerRoute{OverrideOption: rlv3.RateLimitPerRoute_INCLUDE_POLICY}); err == nil ||
		!strings.Contains(err.Error(), "override_option: only DEFAULT") {
		t.Errorf("compileRoute = %v", err)
	}
}

// routeWith is a route to cluster "up" with the given rate limits.
func routeWith(t *testing.T, rls ...string) *router.Route {
	t.Helper()
	r := &router.Route{}
	for _, js := range rls {
		rl := compileRateLimitJSON(t, js)
		r.RateLimits = append(r.RateLimits, rl)
	}
	return r
}

func compileRateLimitJSON(t *testing.T, js string) *router.RateLimit {
	t.Helper()
	c, err := compileOwnRateLimitsJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs the filter's decode and encode steps on s.
func run(c *config, s *httpfiltertest.Stream) httpfilter.Status {
	f := c.NewFilter().(*filter)
	defer f.OnDestroy()
	st := f.DecodeHeaders(s)
	f.EncodeHeaders(s)
	return st
}

func TestFilter(t *testing.T) {
	over := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT, RawBody: []byte("no"),
		DynamicMetadata: &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}}
	ok := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
	tests := map[string]struct {
		config string
		rt     runtimeValues
		resp   *rlsv3.RateLimitResponse
		header []string
		// want: the filter's status, the local reply's status (0:
		// none), the descriptors sent (nil: no call), response
		// headers.
		wantStop    bool
		wantReply   int
		wantGrpc    bool
		wantDescs   [][]string
		wantHeaders []string
		wantMeta    string
	}{
		"over limit, with the service's metadata in the default namespace": {config: `{"domain": "d", SERVICE}`, resp: over,
			wantStop: true, wantReply: 429, wantDescs: [][]string{{"generic_key=a"}, {"source_cluster=svc"}},
			wantHeaders: []string{"x-envoy-ratelimited", "true"}, wantMeta: "envoy.filters.http.ratelimit"},
		"over limit as RESOURCE_EXHAUSTED, custom status, no x-envoy-ratelimited": {
			config: `{"domain": "d", SERVICE, "rate_limited_as_resource_exhausted": true, "rate_limited_status": {"code": 503}, "disable_x_envoy_ratelimited_header": true, "metadata_namespace": "mine"}`,
			resp:   over, wantStop: true, wantReply: 503, wantGrpc: true, wantDescs: [][]string{{"generic_key=a"}, {"source_cluster=svc"}}, wantMeta: "mine"},
		"over limit, not enforced": {config: `{"domain": "d", SERVICE, "filter_enforced": {"default_value": {"numerator": 0}, "runtime_key": "rl.enforced"}}`, resp: over,
			wantDescs: [][]string{{"generic_key=a"}, {"source_cluster=svc"}}, wantHeaders: []string{"x-envoy-ratelimited", "true"}, wantMeta: "envoy.filters.http.ratelimit"},
		"disabled by the runtime": {config: `{"domain": "d", SERVICE}`, rt: runtimeValues{"ratelimit.http_filter_enabled": 0}, resp: over},
		"a disable_key turned off": {config: `{"domain": "d", SERVICE}`, rt: runtimeValues{"ratelimit.off.http_filter_enabled": 0}, resp: ok,
			wantDescs: [][]string{{"generic_key=a"}}},
		"internal only, external request": {config: `{"domain": "d", SERVICE, "request_type": "internal"}`, resp: over},
		"internal only, internal request": {config: `{"domain": "d", SERVICE, "request_type": "internal"}`, resp: ok, header: []string{"x-envoy-internal", "true"},
			wantDescs: [][]string{{"generic_key=a"}, {"source_cluster=svc"}}},
		"the filter's own rate_limits": {config: `{"domain": "d", SERVICE, "rate_limits": [{"actions": [{"remote_address": {}}]}]}`, resp: ok,
			wantDescs: [][]string{{"remote_address=10.0.0.1"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rls, addr := startRLS(t, tc.resp)
			c, err := compileJSON(t, tc.config, addr, tc.rt)
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", "/", tc.header...)
			s.Matched = routeWith(t, `{"actions": [{"generic_key": {"descriptor_value": "a"}}]}`)
			second := compileRateLimitJSON(t, `{"actions": [{"source_cluster": {}}]}`)
			second.DisableKey = "off"
			s.Matched.RateLimits = append(s.Matched.RateLimits, second)
			s.Cluster, s.Remote = "up", "10.0.0.1"
			st := run(c, s)
			if (st == httpfilter.Stop) != tc.wantStop {
				t.Errorf("status %v", st)
			}
			switch {
			case tc.wantReply == 0 && s.Reply != nil:
				t.Errorf("reply %+v", s.Reply)
			case tc.wantReply != 0 && (s.Reply == nil || s.Reply.Status != tc.wantReply || s.Reply.HasGrpcStatus != tc.wantGrpc ||
				s.Reply.Body != "no" || s.Reply.Flags != accesslog.RateLimited || s.Reply.Details != "request_rate_limited"):
				t.Errorf("reply %+v, want %d", s.Reply, tc.wantReply)
			}
			var got [][]string
			if calls := rls.calls(); len(calls) > 0 {
				for _, d := range calls[0].GetDescriptors() {
					var es []string
					for _, e := range d.GetEntries() {
						es = append(es, e.GetKey()+"="+e.GetValue())
					}
					got = append(got, es)
				}
			}
			if diff := cmp.Diff(tc.wantDescs, got); diff != "" {
				t.Errorf("descriptors (-want +got):\n%s", diff)
			}
			for i := 0; i < len(tc.wantHeaders); i += 2 {
				if v, _ := s.RespHeaders.Get(tc.wantHeaders[i]); v != tc.wantHeaders[i+1] {
					t.Errorf("response header %s = %q", tc.wantHeaders[i], v)
				}
			}
			if tc.wantMeta != "" && s.Metadata.GetFilterMetadata()[tc.wantMeta].GetFields()["k"].GetStringValue() != "v" {
				t.Errorf("dynamic metadata %v", s.Metadata)
			}
		})
	}
}

// TestFilterFailure checks the answers to a service that cannot be
// reached: failure_mode_deny and its percentage.
func TestFilterFailure(t *testing.T) {
	tests := map[string]struct {
		config    string
		wantReply int
		allowed   uint64
	}{
		"fail open":                      {config: `{"domain": "d", SERVICE}`, allowed: 1},
		"fail closed with status":        {config: `{"domain": "d", SERVICE, "failure_mode_deny": true, "status_on_error": {"code": 503}}`, wantReply: 503, allowed: 0},
		"fail closed by the percentage":  {config: `{"domain": "d", SERVICE, "failure_mode_deny_percent": {"default_value": {"numerator": 100}, "runtime_key": "k"}}`, wantReply: 500, allowed: 0},
		"fail open despite deny, by 0 %": {config: `{"domain": "d", SERVICE, "failure_mode_deny": true, "failure_mode_deny_percent": {"default_value": {"numerator": 0}, "runtime_key": "k"}}`, allowed: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			_ = ln.Close()
			c, err := compileJSON(t, tc.config, addr, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", "/")
			s.Matched = routeWith(t, `{"actions": [{"generic_key": {"descriptor_value": "a"}}]}`)
			s.Cluster = "up"
			run(c, s)
			if got := 0; s.Reply != nil {
				got = s.Reply.Status
				if got != tc.wantReply || s.Reply.Flags != accesslog.RateLimitServiceError || s.Reply.Details != "rate_limiter_error" {
					t.Errorf("reply %+v", s.Reply)
				}
			} else if tc.wantReply != 0 {
				t.Errorf("no reply, want %d", tc.wantReply)
			}
			if v := c.store.Counter("cluster.up.ratelimit.error").Value(); v != 1 {
				t.Errorf("error = %d", v)
			}
			if v := c.store.Counter("cluster.up.ratelimit.failure_mode_allowed").Value(); v != tc.allowed {
				t.Errorf("failure_mode_allowed = %d", v)
			}
		})
	}
}

// compileOwnRateLimitsJSON compiles one route RateLimit given as JSON.
func compileOwnRateLimitsJSON(js string) (*router.RateLimit, error) {
	p := &routev3.RateLimit{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		return nil, err
	}
	return router.CompileRateLimit(p)
}

// perRouteJSON compiles a RateLimitPerRoute given as JSON.
func perRouteJSON(t *testing.T, js string) *routeConfig {
	t.Helper()
	p := &rlv3.RateLimitPerRoute{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	rc, err := compileRoute(p)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// described is a call's descriptors as "key=value,...#hits" strings
// ("#-" without a hits_addend, "#hits back" with is_negative_hits).
func described(req *rlsv3.RateLimitRequest) []string {
	var out []string
	for _, d := range req.GetDescriptors() {
		var es []string
		for _, e := range d.GetEntries() {
			es = append(es, e.GetKey()+"="+e.GetValue())
		}
		h := "-"
		if d.GetHitsAddend() != nil {
			h = strconv.FormatUint(d.GetHitsAddend().GetValue(), 10)
		}
		if d.GetIsNegativeHits() {
			h += " back"
		}
		out = append(out, strings.Join(es, ",")+"#"+h)
	}
	return out
}

// TestHitsAddendAndStreamDone checks the RateLimitPerRoute entries'
// hits_addend (fixed, formatted, and a formatted value that is no number,
// which drops its descriptor), is_negative_hits, and
// apply_on_stream_done: those entries are sent only once the filter is
// destroyed, under the per-route domain.
func TestHitsAddendAndStreamDone(t *testing.T) {
	rls, addr := startRLS(t, &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK})
	c, err := compileJSON(t, `{"domain": "d", SERVICE}`, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := perRouteJSON(t, `{"domain": "per-route", "rate_limits": [
		{"hits_addend": {"number": 5}, "actions": [{"generic_key": {"descriptor_value": "fixed"}}]},
		{"hits_addend": {"format": "%REQ(x-hits)%"}, "actions": [{"generic_key": {"descriptor_value": "header"}}]},
		{"hits_addend": {"format": "%REQ(x-none)%"}, "actions": [{"generic_key": {"descriptor_value": "dropped"}}]},
		{"hits_addend": {"number": 2, "is_negative_hits": true}, "actions": [{"generic_key": {"descriptor_value": "refund"}}]},
		{"apply_on_stream_done": true, "hits_addend": {"format": "%BYTES_RECEIVED%"}, "actions": [{"generic_key": {"descriptor_value": "done"}}]},
		{"apply_on_stream_done": true, "hits_addend": {"format": "%REQ(x-hits)%", "is_negative_hits": true}, "actions": [{"generic_key": {"descriptor_value": "done-back"}}]}]}`)
	s := httpfiltertest.NewStream("POST", "/", "x-hits", "7", "x-none", "many")
	s.Matched = routeWith(t, `{"actions": [{"generic_key": {"descriptor_value": "route"}}]}`)
	s.PerRoute = map[string][]httpfilter.RouteConfig{c.name: {rc}}
	s.Cluster, s.Remote = "up", "10.0.0.1"
	f := c.NewFilter().(*filter)
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("status %v", st)
	}
	calls := rls.calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls before the stream ended", len(calls))
	}
	if diff := cmp.Diff([]string{"generic_key=fixed#5", "generic_key=header#7", "generic_key=refund#2 back"}, described(calls[0])); diff != "" {
		t.Errorf("request descriptors (-want +got):\n%s", diff)
	}
	if calls[0].GetDomain() != "per-route" || calls[0].GetHitsAddend() != 0 {
		t.Errorf("request call %v", calls[0])
	}
	s.StreamInfo.BytesReceived = 1234
	f.OnDestroy()
	deadline := time.Now().Add(10 * time.Second)
	for len(rls.calls()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	calls = rls.calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want the stream-done one too", len(calls))
	}
	if diff := cmp.Diff([]string{"generic_key=done#1234", "generic_key=done-back#7 back"}, described(calls[1])); diff != "" || calls[1].GetDomain() != "per-route" {
		t.Errorf("stream-done call in %q (-want +got):\n%s", calls[1].GetDomain(), diff)
	}
}
