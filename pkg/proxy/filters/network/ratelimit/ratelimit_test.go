package ratelimit

import (
	"context"
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	netrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// overLimit is a rate limit service that answers every call OVER_LIMIT.
type overLimit struct {
	rlsv3.UnimplementedRateLimitServiceServer
}

func (overLimit) ShouldRateLimit(context.Context, *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT}, nil
}

// percentages is a runtime of integer values (and no booleans).
type percentages map[string]uint64

func (p percentages) Uint64(key string, def uint64) uint64 {
	if v, ok := p[key]; ok {
		return v
	}
	return def
}

func (percentages) Bool(_ string, def bool) bool { return def }

// conn is a connection the filter looks at (it reads nothing of it).
type conn struct{ net.Conn }

func (conn) OnClose(func()) {}

// build compiles a network RateLimit given as JSON, whose service is
// target; SERVICE in js stands for its rate_limit_service.
func build(t *testing.T, js, target string, rt percentages) (*Filter, *stats.Store, error) {
	t.Helper()
	js = strings.ReplaceAll(js, "SERVICE", `"rate_limit_service": {"transport_api_version": "V3", "grpc_service": {"google_grpc": {"target_uri": "`+target+`", "stat_prefix": "rls"}}}`)
	p := &netrlv3.RateLimit{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	f, err := Factory{}.Compile(p, netfilter.Context{Stats: store, Runtime: rt, OpenGRPC: func(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
		return grpcservice.Open(gs, grpcservice.Context{})
	}})
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { _ = f.(*Filter).client.Close() })
	return f.(*Filter), store, nil
}

func TestCompileRefuses(t *testing.T) {
	tests := map[string]struct{ config, want string }{
		"no stat_prefix":  {`{"domain": "d", SERVICE, "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`, "stat_prefix: must be set"},
		"no descriptors":  {`{"stat_prefix": "s", "domain": "d", SERVICE}`, "descriptors: at least one descriptor is required"},
		"a bad formatter": {`{"stat_prefix": "s", "domain": "d", SERVICE, "descriptors": [{"entries": [{"key": "k", "value": "%NOPE%"}]}]}`, "descriptors[0].entries[0].value: "},
		"V2 transport":    {`{"stat_prefix": "s", "domain": "d", "rate_limit_service": {"transport_api_version": "V2", "grpc_service": {"google_grpc": {"target_uri": "x", "stat_prefix": "r"}}}, "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`, "rate_limit_service.transport_api_version: V2 is not supported"},
		"no grpc_service": {`{"stat_prefix": "s", "domain": "d", "rate_limit_service": {"transport_api_version": "V3"}, "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`, "rate_limit_service.grpc_service: must be set"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := build(t, tc.config, "127.0.0.1:1", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestRuntimeKeys checks ratelimit.tcp_filter_enabled and
// ratelimit.tcp_filter_enforcing.
func TestRuntimeKeys(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(srv, overLimit{})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	const cfg = `{"stat_prefix": "s", "domain": "d", "timeout": "5s", SERVICE, "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`
	tests := map[string]struct {
		rt                     percentages
		refused                bool
		total, overLim, closed uint64
	}{
		"enforced":     {refused: true, total: 1, overLim: 1, closed: 1},
		"not enforced": {rt: percentages{"ratelimit.tcp_filter_enforcing": 0}, total: 1, overLim: 1},
		"disabled":     {rt: percentages{"ratelimit.tcp_filter_enabled": 0}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, store, err := build(t, cfg, ln.Addr().String(), tc.rt)
			if err != nil {
				t.Fatal(err)
			}
			r := f.OnNewConnection(conn{})
			if (r != nil) != tc.refused || (r != nil && r.Reason != "ratelimit_close_over_limit") {
				t.Errorf("refusal %+v", r)
			}
			for stat, want := range map[string]uint64{"total": tc.total, "over_limit": tc.overLim, "cx_closed": tc.closed} {
				if v := store.Counter("ratelimit.s." + stat).Value(); v != want {
					t.Errorf("%s = %d, want %d", stat, v, want)
				}
			}
			if v := store.Gauge("ratelimit.s.active").Value(); v != 0 {
				t.Errorf("active = %d", v)
			}
		})
	}
}
