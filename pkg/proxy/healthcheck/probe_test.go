package healthcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filesinkv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/health_check/event_sinks/file/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// plainDial dials TCP.
func plainDial(ctx context.Context, _ *upstream.Host, addr string, _ []string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// compiled compiles hc for cluster "svc" or fails the test.
func compiled(t *testing.T, hc *corev3.HealthCheck, http2 bool) *Config {
	t.Helper()
	cfg, errs := Compile(hc, ClusterInfo{Name: "svc", HTTP2: http2})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return cfg
}

func healthCheck(kind func(*corev3.HealthCheck)) *corev3.HealthCheck {
	hc := &corev3.HealthCheck{
		Timeout:            durationpb.New(time.Second),
		Interval:           durationpb.New(time.Second),
		UnhealthyThreshold: wrapperspb.UInt32(1),
		HealthyThreshold:   wrapperspb.UInt32(1),
	}
	kind(hc)
	return hc
}

func probeOnce(t *testing.T, cfg *Config, addr string) result {
	t.Helper()
	c := New(cfg, Env{Cluster: "svc", Scope: stats.NewStore().Scope("cluster.svc."), Dial: plainDial})
	p := c.newProber(addr, &upstream.Host{Address: addr})
	defer p.close()
	return p.probe(context.Background(), time.Now().Add(2*time.Second))
}

func TestHTTPProbe(t *testing.T) {
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Method + " " + r.Host + " " + r.URL.Path + " " + r.UserAgent() + " " + r.Header.Get("x-check"))
		switch r.URL.Path {
		case "/degraded":
			w.Header().Set("x-envoy-degraded", "")
		case "/down":
			w.Header().Set("x-envoy-immediate-health-check-fail", "true")
			w.WriteHeader(503)
		case "/busy":
			w.WriteHeader(429)
		case "/svc":
			w.Header().Set("x-envoy-upstream-healthchecked-cluster", "other")
		}
		_, _ = w.Write([]byte("status: all good"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	httpCheck := func(h *corev3.HealthCheck_HttpHealthCheck) *Config {
		return compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
			hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: h}
		}), false)
	}
	r := probeOnce(t, httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/ok", RequestHeadersToAdd: []*corev3.HeaderValueOption{
		{Header: &corev3.HeaderValue{Key: "x-check", Value: "yes-%UPSTREAM_CLUSTER%"}},
	}}), addr)
	if r.outcome != outcomeSuccess {
		t.Fatalf("/ok: %+v", r)
	}
	if got := seen.Load().(string); got != "GET svc /ok Envoy/HC yes-svc" {
		t.Errorf("request seen as %q", got)
	}
	if r := probeOnce(t, httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/degraded", Host: "h.example"}), addr); r.outcome != outcomeDegraded {
		t.Errorf("/degraded: %+v", r)
	}
	if got := seen.Load().(string); !strings.HasPrefix(got, "GET h.example /degraded") {
		t.Errorf("request seen as %q", got)
	}
	if r := probeOnce(t, httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/down"}), addr); r.outcome != outcomeFailed || r.status != 503 || !r.immediateFail {
		t.Errorf("/down: %+v", r)
	}
	busy := httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/busy", RetriableStatuses: nil})
	if r := probeOnce(t, busy, addr); r.outcome != outcomeFailed {
		t.Errorf("/busy: %+v", r)
	}
	busy.http.retriable = []statusRange{{429, 430}}
	if r := probeOnce(t, busy, addr); r.outcome != outcomeRetriable {
		t.Errorf("/busy retriable: %+v", r)
	}
	recv := httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/ok", Receive: []*corev3.HealthCheck_Payload{
		{Payload: &corev3.HealthCheck_Payload_Binary{Binary: []byte("all")}},
		{Payload: &corev3.HealthCheck_Payload_Text{Text: "676f6f64"}}, // "good"
	}})
	if r := probeOnce(t, recv, addr); r.outcome != outcomeSuccess {
		t.Errorf("receive all, good: %+v", r)
	}
	recv.http.receive = [][]byte{[]byte("good"), []byte("all")}
	if r := probeOnce(t, recv, addr); r.outcome != outcomeFailed {
		t.Errorf("receive out of order: %+v", r)
	}
	post := httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/ok", Method: corev3.RequestMethod_POST,
		Send: &corev3.HealthCheck_Payload{Payload: &corev3.HealthCheck_Payload_Text{Text: "00ff"}}})
	if r := probeOnce(t, post, addr); r.outcome != outcomeSuccess || !strings.HasPrefix(seen.Load().(string), "POST ") {
		t.Errorf("POST: %+v, seen %q", r, seen.Load())
	}
	if r := probeOnce(t, httpCheck(&corev3.HealthCheck_HttpHealthCheck{Path: "/ok"}), "127.0.0.1:1"); r.outcome != outcomeNetwork {
		t.Errorf("refused: %+v", r)
	}
	// service_name_matcher reads x-envoy-upstream-healthchecked-cluster.
	matcher := func(prefix string) *corev3.HealthCheck_HttpHealthCheck {
		return &corev3.HealthCheck_HttpHealthCheck{Path: "/svc", ServiceNameMatcher: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: prefix}}}
	}
	if r := probeOnce(t, httpCheck(matcher("oth")), addr); r.outcome != outcomeSuccess {
		t.Errorf("service name matches: %+v", r)
	}
	if r := probeOnce(t, httpCheck(matcher("svc")), addr); r.outcome != outcomeFailed {
		t.Errorf("service name mismatch: %+v", r)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 16)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if string(buf[:n]) == "ping" {
						_, _ = c.Write([]byte("po"))
						_, _ = c.Write([]byte("ng!"))
					}
				}
			}()
		}
	}()
	tcp := func(send string, receive ...string) *Config {
		return compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
			tc := &corev3.HealthCheck_TcpHealthCheck{}
			if send != "" {
				tc.Send = &corev3.HealthCheck_Payload{Payload: &corev3.HealthCheck_Payload_Binary{Binary: []byte(send)}}
			}
			for _, r := range receive {
				tc.Receive = append(tc.Receive, &corev3.HealthCheck_Payload{Payload: &corev3.HealthCheck_Payload_Binary{Binary: []byte(r)}})
			}
			hc.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: tc}
		}), false)
	}
	addr := ln.Addr().String()
	if r := probeOnce(t, tcp(""), addr); r.outcome != outcomeSuccess {
		t.Errorf("connect only: %+v", r)
	}
	if r := probeOnce(t, tcp("ping", "pong"), addr); r.outcome != outcomeSuccess {
		t.Errorf("ping/pong: %+v", r)
	}
	// A mismatch waits for the right bytes until the timeout.
	ctxProbe := func(cfg *Config) (result, error) {
		c := New(cfg, Env{Scope: stats.NewStore().Scope("x."), Dial: plainDial})
		p := c.newProber(addr, &upstream.Host{Address: addr})
		defer p.close()
		deadline := time.Now().Add(200 * time.Millisecond)
		r := p.probe(context.Background(), deadline)
		if time.Now().Before(deadline) {
			return r, nil
		}
		return r, context.DeadlineExceeded
	}
	if r, err := ctxProbe(tcp("ping", "pang")); r.outcome != outcomeNetwork || err == nil {
		t.Errorf("mismatch: %+v (ctx %v), want a network outcome at the deadline", r, err)
	}
	if r := probeOnce(t, tcp(""), "127.0.0.1:1"); r.outcome != outcomeNetwork {
		t.Errorf("refused: %+v", r)
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	hs.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
	cfg := compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
		hc.HealthChecker = &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{ServiceName: "orders"}}
	}), true)
	addr := ln.Addr().String()
	if r := probeOnce(t, cfg, addr); r.outcome != outcomeSuccess {
		t.Fatalf("SERVING: %+v", r)
	}
	hs.SetServingStatus("orders", healthpb.HealthCheckResponse_NOT_SERVING)
	if r := probeOnce(t, cfg, addr); r.outcome != outcomeFailed {
		t.Errorf("NOT_SERVING: %+v", r)
	}
	cfg.grpc.service = "unknown"
	if r := probeOnce(t, cfg, addr); r.outcome != outcomeFailed {
		t.Errorf("unknown service: %+v", r)
	}
}

func TestStartStopLeavesNoGoroutine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	before := runtime.NumGoroutine()
	cfg := compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
		hc.Interval = durationpb.New(10 * time.Millisecond)
		hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/"}}
	}), false)
	var changes atomic.Int32
	c := New(cfg, Env{Cluster: "svc", Scope: stats.NewStore().Scope("cluster.svc."), Dial: plainDial, Changed: func() { changes.Add(1) }})
	addr := strings.TrimPrefix(srv.URL, "http://")
	hosts := []*upstream.Host{{Address: addr}, {Address: "127.0.0.1:1"}}
	c.Sync(hosts)
	c.Start()
	select {
	case <-c.FirstChecks():
	case <-time.After(5 * time.Second):
		t.Fatal("first checks never ended")
	}
	if !hosts[0].Healthy() || hosts[1].Healthy() {
		t.Fatalf("after the first round: %v %v", hosts[0].Healthy(), hosts[1].Healthy())
	}
	if changes.Load() == 0 {
		t.Error("the cluster was never told of a change")
	}
	c.Sync(hosts[:1]) // removes a running session
	c.Stop()
	srv.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Stop, %d before Start", n, before)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		hc   *corev3.HealthCheck
		want string
	}{
		{"no timeout", &corev3.HealthCheck{Interval: durationpb.New(time.Second), UnhealthyThreshold: wrapperspb.UInt32(1), HealthyThreshold: wrapperspb.UInt32(1),
			HealthChecker: &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{}}}, "timeout: required"},
		{"zero interval", healthCheck(func(hc *corev3.HealthCheck) {
			hc.Interval = durationpb.New(0)
			hc.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{}}
		}), "interval: must be a positive duration"},
		{"no thresholds", &corev3.HealthCheck{Timeout: durationpb.New(time.Second), Interval: durationpb.New(time.Second),
			HealthChecker: &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{}}}, "unhealthy_threshold: required"},
		{"no checker", healthCheck(func(*corev3.HealthCheck) {}), "health_checker: one of"},
		{"bad hex", healthCheck(func(hc *corev3.HealthCheck) {
			hc.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{
				Send: &corev3.HealthCheck_Payload{Payload: &corev3.HealthCheck_Payload_Text{Text: "zz"}}}}
		}), "tcp_health_check.send: text: invalid hex string 'zz'"},
		{"bad range", healthCheck(func(hc *corev3.HealthCheck) {
			hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/",
				ExpectedStatuses: []*typev3.Int64Range{{Start: 200, End: 700}}}}
		}), "http_health_check.expected_statuses[0]: invalid http expected status range: expecting end <= 600"},
		{"payload with GET", healthCheck(func(hc *corev3.HealthCheck) {
			hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/",
				Send: &corev3.HealthCheck_Payload{Payload: &corev3.HealthCheck_Payload_Text{Text: "00"}}}}
		}), "http_health_check.send: HTTP health check cannot specify a request payload with method 'GET'"},
		{"event sink of another type", healthCheck(func(hc *corev3.HealthCheck) {
			a, _ := anypb.New(&corev3.Address{})
			hc.EventLogger = []*corev3.TypedExtensionConfig{{Name: "x", TypedConfig: a}}
		}), "event_logger[0].typed_config: only the file sink"},
		{"event sink without a path", healthCheck(func(hc *corev3.HealthCheck) {
			a, _ := anypb.New(&filesinkv3.HealthCheckEventFileSink{})
			hc.EventLogger = []*corev3.TypedExtensionConfig{{Name: "x", TypedConfig: a}}
		}), "event_logger[0].typed_config.event_log_path: must be set"},
		{"grpc without h2", healthCheck(func(hc *corev3.HealthCheck) {
			hc.HealthChecker = &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{}}
		}), "grpc_health_check: svc cluster must support HTTP/2 for gRPC healthchecking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Compile(tc.hc, ClusterInfo{Name: "svc"})
			for _, err := range errs {
				if strings.HasPrefix(err.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("errors %v, want one starting %q", errs, tc.want)
		})
	}
}

func TestHTTP2Probe(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 || r.Host != "svc" || r.UserAgent() != "Envoy/HC" {
			w.WriteHeader(500)
			return
		}
		if r.URL.Path == "/degraded" {
			w.Header().Set("x-envoy-degraded", "")
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	check := func(path string) *Config {
		return compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
			hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{
				Path: path, CodecClientType: typev3.CodecClientType_HTTP2}}
		}), false)
	}
	if r := probeOnce(t, check("/ok"), addr); r.outcome != outcomeSuccess {
		t.Errorf("h2c /ok: %+v", r)
	}
	if r := probeOnce(t, check("/degraded"), addr); r.outcome != outcomeDegraded {
		t.Errorf("h2c /degraded: %+v", r)
	}
}

func TestAltPortAndReuseConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	pn, _ := strconv.Atoi(port)
	for _, reuse := range []bool{true, false} {
		conns.Store(0)
		cfg := compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
			hc.AltPort = wrapperspb.UInt32(uint32(pn))
			hc.ReuseConnection = wrapperspb.Bool(reuse)
			hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/"}}
		}), false)
		c := New(cfg, Env{Cluster: "svc", Scope: stats.NewStore().Scope("cluster.svc."), Dial: plainDial})
		// The host's own port has nothing listening: alt_port is where
		// checks go.
		addr := c.checkAddress(&upstream.Host{Address: "127.0.0.1:1"})
		if addr != "127.0.0.1:"+port {
			t.Fatalf("check address %s, want port %s", addr, port)
		}
		p := c.newProber(addr, &upstream.Host{Address: "127.0.0.1:1"})
		for i := 0; i < 3; i++ {
			if r := p.probe(context.Background(), time.Now().Add(2*time.Second)); r.outcome != outcomeSuccess {
				t.Fatalf("reuse=%v check %d: %+v", reuse, i, r)
			}
		}
		p.close()
		want := int32(1)
		if !reuse {
			want = 3
		}
		if got := conns.Load(); got != want {
			t.Errorf("reuse_connection %v: %d connections for 3 checks, want %d", reuse, got, want)
		}
	}
}
