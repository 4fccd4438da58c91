package grpcservice

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// flakyHealth fails its first fail calls with UNAVAILABLE, then serves;
// it records the x-envoy headers of the last call.
type flakyHealth struct {
	healthpb.UnimplementedHealthServer
	fail     int32
	calls    atomic.Int32
	internal atomic.Value
	xff      atomic.Value
}

func (f *flakyHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	n := f.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	f.internal.Store(strings.Join(md.Get("x-envoy-internal"), ","))
	f.xff.Store(strings.Join(md.Get("x-forwarded-for"), ","))
	if n <= f.fail {
		return nil, status.Error(codes.Unavailable, "not yet")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serveFlaky starts f on loopback.
func serveFlaky(t *testing.T, f *flakyHealth) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// call makes one Check through a channel opened from js, the cluster
// "c" reaching addr.
func call(t *testing.T, js, addr string, ctx Context) error {
	t.Helper()
	ctx.Cluster = func(string) Cluster { return &countingCluster{addr: addr} }
	ch, err := Open(parse(t, js), ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	cctx, cancel := ch.CallContext(context.Background(), false)
	defer cancel()
	_, err = healthpb.NewHealthClient(ch.Conn()).Check(cctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestRetryPolicyRetriesTheCall(t *testing.T) {
	tests := map[string]struct {
		policy    string
		fail      int32
		wantErr   bool
		wantCalls int32
	}{
		"retried":                {`"retry_policy": {"retry_on": "unavailable", "retry_back_off": {"base_interval": "0.001s"}},`, 1, false, 2},
		"num_retries bounds":     {`"retry_policy": {"retry_on": "unavailable", "num_retries": 2, "retry_back_off": {"base_interval": "0.001s"}},`, 5, true, 3},
		"other status":           {`"retry_policy": {"retry_on": "internal", "retry_back_off": {"base_interval": "0.001s"}},`, 1, true, 1},
		"no retry_on":            {`"retry_policy": {"num_retries": 3},`, 1, true, 1},
		"connect-failure covers": {`"retry_policy": {"retry_on": "connect-failure", "retry_back_off": {"base_interval": "0.001s"}},`, 1, false, 2},
		"none":                   {``, 1, true, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &flakyHealth{fail: tc.fail}
			addr := serveFlaky(t, f)
			err := call(t, `{`+tc.policy+`"envoy_grpc": {"cluster_name": "c"}}`, addr, Context{})
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
			if n := f.calls.Load(); n != tc.wantCalls {
				t.Errorf("the service got %d calls, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestGoogleGrpcIgnoresRetryPolicy(t *testing.T) {
	// As Envoy's Google gRPC client: only envoy_grpc applies it.
	f := &flakyHealth{fail: 1}
	addr := serveFlaky(t, f)
	ch, err := Open(parse(t, `{"google_grpc": {"target_uri": "`+addr+`", "stat_prefix": "c"},
		"retry_policy": {"retry_on": "unavailable", "retry_back_off": {"base_interval": "0.001s"}}}`), Context{})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := healthpb.NewHealthClient(ch.Conn()).Check(context.Background(), &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("the failed call was retried")
	}
}

func TestEnvoyHeaders(t *testing.T) {
	tests := map[string]struct {
		js, internal, xff string
	}{
		"sent":    {`{"envoy_grpc": {"cluster_name": "c"}}`, "true", "10.1.2.3"},
		"skipped": {`{"envoy_grpc": {"cluster_name": "c", "skip_envoy_headers": true}}`, "", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &flakyHealth{}
			addr := serveFlaky(t, f)
			if err := call(t, tc.js, addr, Context{LocalAddress: "10.1.2.3"}); err != nil {
				t.Fatal(err)
			}
			if got := f.internal.Load(); got != tc.internal {
				t.Errorf("x-envoy-internal = %q, want %q", got, tc.internal)
			}
			if got := f.xff.Load(); got != tc.xff {
				t.Errorf("x-forwarded-for = %q, want %q", got, tc.xff)
			}
		})
	}
	// google_grpc calls carry none, as Envoy's Google gRPC client's.
	f := &flakyHealth{}
	addr := serveFlaky(t, f)
	ch, err := Open(parse(t, `{"google_grpc": {"target_uri": "`+addr+`", "stat_prefix": "c"}}`), Context{LocalAddress: "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := healthpb.NewHealthClient(ch.Conn()).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := f.internal.Load(); got != "" {
		t.Errorf("google_grpc sent x-envoy-internal %q", got)
	}
}

func TestMaxReceiveMessageLength(t *testing.T) {
	f := &flakyHealth{}
	addr := serveFlaky(t, f)
	// A SERVING response is 2 bytes: a limit of 1 refuses it.
	err := call(t, `{"envoy_grpc": {"cluster_name": "c", "max_receive_message_length": 1}}`, addr, Context{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("error %v, want RESOURCE_EXHAUSTED", err)
	}
	if err := call(t, `{"envoy_grpc": {"cluster_name": "c", "max_receive_message_length": 2}}`, addr, Context{}); err != nil {
		t.Errorf("a response within the limit failed: %v", err)
	}
	// A client's own bound (the discovery streams') does not lift it.
	ch, err := Open(parse(t, `{"envoy_grpc": {"cluster_name": "c", "max_receive_message_length": 1}}`),
		Context{Cluster: func(string) Cluster { return &countingCluster{addr: addr} }})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	_, err = healthpb.NewHealthClient(ch.Conn()).Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.MaxCallRecvMsgSize(1<<20))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("with a call's own larger bound: error %v, want RESOURCE_EXHAUSTED", err)
	}
}

func TestReconnectBackoff(t *testing.T) {
	ctx := Context{Cluster: func(string) Cluster { return &countingCluster{} }}
	ch, err := Open(parse(t, `{"envoy_grpc": {"cluster_name": "c", "retry_policy": {"retry_back_off": {"base_interval": "0.2s"}}}}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	b, ok := ch.ReconnectBackoff()
	if !ok || b.Base.Milliseconds() != 200 || b.Max.Milliseconds() != 2000 {
		t.Errorf("ReconnectBackoff = %+v, %v; want 200ms and ten times that", b, ok)
	}
	ch2, err := Open(parse(t, `{"envoy_grpc": {"cluster_name": "c"}}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ch2.Close()
	if _, ok := ch2.ReconnectBackoff(); ok {
		t.Error("a back-off without retry_policy")
	}
}

func TestLocalAddress(t *testing.T) {
	if ip := net.ParseIP(LocalAddress()); ip == nil || ip.To4() == nil {
		t.Errorf("LocalAddress() = %q, want an IPv4 address", LocalAddress())
	}
}
