package grpcservice

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
)

// seen records the authority and metadata of the calls a server gets.
type seen struct {
	authority atomic.Value
	tenant    atomic.Value
}

// serve starts a gRPC health server on loopback that records what it sees.
func serve(t *testing.T) (string, *seen) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		s.authority.Store(strings.Join(md.Get(":authority"), ","))
		s.tenant.Store(strings.Join(md.Get("x-tenant"), ","))
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), s
}

// countingCluster dials one address and counts its connections.
type countingCluster struct {
	addr  string
	dials atomic.Int32
}

func (c *countingCluster) Connect(ctx context.Context) (net.Conn, error) {
	c.dials.Add(1)
	var d net.Dialer
	return d.DialContext(ctx, "tcp", c.addr)
}

func parse(t *testing.T, js string) *corev3.GrpcService {
	t.Helper()
	var gs corev3.GrpcService
	if err := protojson.Unmarshal([]byte(js), &gs); err != nil {
		t.Fatal(err)
	}
	return &gs
}

func check(t *testing.T, ch *Channel) {
	t.Helper()
	ctx, cancel := ch.CallContext(context.Background(), false)
	defer cancel()
	res, err := healthpb.NewHealthClient(ch.Conn()).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("status %v", res.GetStatus())
	}
}

func TestEnvoyGrpcGoesThroughTheCluster(t *testing.T) {
	addr, s := serve(t)
	cl := &countingCluster{addr: addr}
	ch, err := Open(parse(t, `{"envoy_grpc": {"cluster_name": "collector"}, "timeout": "5s",
		"initial_metadata": [{"key": "X-Tenant", "value": "t1"}]}`),
		Context{Cluster: func(name string) Cluster {
			if name == "collector" {
				return cl
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	check(t, ch)
	check(t, ch)
	if n := cl.dials.Load(); n != 1 {
		t.Errorf("the cluster was dialled %d times for two calls, want once", n)
	}
	if got := s.authority.Load(); got != "collector" {
		t.Errorf(":authority = %v, want the cluster's name", got)
	}
	if got := s.tenant.Load(); got != "t1" {
		t.Errorf("x-tenant = %v, want the initial metadata (key lower-cased)", got)
	}
	if ch.Target != "cluster collector" {
		t.Errorf("Target = %q", ch.Target)
	}
}

func TestEnvoyGrpcAuthority(t *testing.T) {
	addr, s := serve(t)
	ch, err := Open(parse(t, `{"envoy_grpc": {"cluster_name": "c", "authority": "collector.example"}}`),
		Context{Cluster: func(string) Cluster { return &countingCluster{addr: addr} }})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	check(t, ch)
	if got := s.authority.Load(); got != "collector.example" {
		t.Errorf(":authority = %v, want the configured one", got)
	}
}

func TestGoogleGrpcReachesItsTarget(t *testing.T) {
	addr, _ := serve(t)
	ch, err := Open(parse(t, `{"google_grpc": {"target_uri": "`+addr+`", "stat_prefix": "c"}}`), Context{})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	check(t, ch)
}

func TestCallContext(t *testing.T) {
	ch, err := Open(parse(t, `{"google_grpc": {"target_uri": "127.0.0.1:1", "stat_prefix": "c"}, "timeout": "2s"}`), Context{})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ctx, cancel := ch.CallContext(context.Background(), false)
	dl, ok := ctx.Deadline()
	cancel()
	if !ok || time.Until(dl) > 2*time.Second {
		t.Errorf("a unary call's deadline = %v, %v; want within the 2 s timeout", dl, ok)
	}
	ctx, cancel = ch.CallContext(context.Background(), true)
	_, ok = ctx.Deadline()
	cancel()
	if ok {
		t.Error("a stream got a deadline: streams ignore the timeout")
	}
}

func TestOpenErrors(t *testing.T) {
	known := Context{Cluster: func(name string) Cluster {
		if name == "c" {
			return &countingCluster{}
		}
		return nil
	}}
	tests := map[string]struct{ js, want string }{
		"no target":          {`{}`, "target_specifier: one of envoy_grpc or google_grpc is required"},
		"negative timeout":   {`{"envoy_grpc": {"cluster_name": "c"}, "timeout": "-1s"}`, "timeout: must not be negative"},
		"unknown cluster":    {`{"envoy_grpc": {"cluster_name": "nope"}}`, "envoy_grpc.cluster_name: unknown gRPC client cluster 'nope'"},
		"no cluster name":    {`{"envoy_grpc": {}}`, "envoy_grpc.cluster_name: must be set"},
		"retry back-off":     {`{"envoy_grpc": {"cluster_name": "c", "retry_policy": {"retry_back_off": {"base_interval": "2s", "max_interval": "1s"}}}}`, "envoy_grpc.retry_policy.retry_back_off.max_interval: max_interval must be greater than or equal to the base_interval"},
		"too many retries":   {`{"envoy_grpc": {"cluster_name": "c"}, "retry_policy": {"num_retries": 5, "retry_on": "unavailable"}}`, "retry_policy.num_retries: at most 4"},
		"http retry_on":      {`{"envoy_grpc": {"cluster_name": "c"}, "retry_policy": {"retry_on": "unavailable,5xx"}}`, `retry_policy.retry_on: "5xx" is not supported`},
		"reserved metadata":  {`{"envoy_grpc": {"cluster_name": "c"}, "initial_metadata": [{"key": "Host", "value": "x"}]}`, `initial_metadata[0].key: "Host" cannot be set`},
		"empty metadata key": {`{"envoy_grpc": {"cluster_name": "c"}, "initial_metadata": [{"value": "x"}]}`, "initial_metadata[0].key: must be set"},
		"no target uri":      {`{"google_grpc": {"stat_prefix": "c"}}`, "google_grpc.target_uri: must be set"},
		"no stat prefix":     {`{"google_grpc": {"target_uri": "127.0.0.1:1"}}`, "google_grpc.stat_prefix: must be set"},
		"credentials":        {`{"google_grpc": {"target_uri": "127.0.0.1:1", "stat_prefix": "c", "channel_credentials": {"local_credentials": {}}}}`, "google_grpc.channel_credentials: not supported"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ch, err := Open(parse(t, tc.js), known)
			if err == nil {
				ch.Close()
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
