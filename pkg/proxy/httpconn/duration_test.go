package httpconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// withStreamDuration sets a route's max_stream_duration.
func withStreamDuration(sd *routev3.RouteAction_MaxStreamDuration) func(*routev3.RouteAction) {
	return func(a *routev3.RouteAction) { a.MaxStreamDuration = sd }
}

// stalledUpstream answers after 5 s, or when its client goes; it speaks
// HTTP/1.1 and h2c.
func stalledUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// A request body that never ends, sent over HTTP/2 to an HTTP/2 upstream
// whose transport reads it in its own goroutine: the connection manager's
// max_stream_duration answers 408 (run with -race, this also checks that
// the two goroutines share the stream's limits safely).
func TestMaxStreamDurationBodyToHTTP2Upstream(t *testing.T) {
	st := stats.NewStore()
	fc := newFakeCluster(st, "h2", true, hostOf(h2cUpstream(t)))
	cfg := hcm(routeConfig(clusterRoute("/", "h2")))
	cfg.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: durationpb.New(300 * time.Millisecond)}
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"h2": fc}})
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	go func() { _, _ = io.WriteString(pw, "partial") }()
	status, _, body := do(t, h2cClient(), "POST", p.url("/up"), pr, nil)
	if status != 408 || body != "downstream duration timeout" {
		t.Fatalf("got %d %q, want 408 downstream duration timeout", status, body)
	}
	p.waitCounter(t, "http.test.downstream_rq_max_duration_reached", 1)
}

// The cluster's max_stream_duration over an HTTP/2 upstream: 504 once the
// request has all arrived, flag UMSDR.
func TestUpstreamMaxStreamDurationHTTP2(t *testing.T) {
	st := stats.NewStore()
	fc := newFakeCluster(st, "h2", true, hostOf(stalledUpstream(t)))
	fc.maxDuration = 200 * time.Millisecond
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "h2"))), Deps{Stats: st, Upstreams: fakeUpstreams{"h2": fc}})
	for _, c := range []*http.Client{client(), h2cClient()} {
		status, _, body := do(t, c, "GET", p.url("/slow"), nil, nil)
		if status != 504 || body != "upstream max stream duration reached" {
			t.Fatalf("got %d %q, want 504 upstream max stream duration reached", status, body)
		}
	}
	if got := p.counter("cluster.h2.upstream_rq_max_duration_reached"); got != 2 {
		t.Errorf("upstream_rq_max_duration_reached = %d, want 2", got)
	}
	if got := p.counter("http.test.downstream_rq_max_duration_reached"); got != 0 {
		t.Errorf("downstream_rq_max_duration_reached = %d, want 0", got)
	}
}

// A route's grpc_timeout_header_max: the grpc-timeout that goes upstream
// is the duration chosen; a request that is not gRPC keeps its header.
func TestRouteGrpcTimeoutRewrite(t *testing.T) {
	st := stats.NewStore()
	fc := newFakeCluster(st, "echo", false, hostOf(echoUpstream(t)))
	sd := &routev3.RouteAction_MaxStreamDuration{
		GrpcTimeoutHeaderMax:    durationpb.New(time.Second),
		GrpcTimeoutHeaderOffset: durationpb.New(100 * time.Millisecond),
	}
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "echo", withStreamDuration(sd)))), Deps{Stats: st, Upstreams: fakeUpstreams{"echo": fc}})
	tests := []struct {
		contentType, grpcTimeout, want string
	}{
		{"application/grpc", "5S", "grpc-timeout: 900m\n"},
		{"application/grpc+proto", "500000u", "grpc-timeout: 400m\n"},
		{"text/plain", "5S", "grpc-timeout: 5S\n"},
	}
	for _, tt := range tests {
		status, _, body := do(t, client(), "POST", p.url("/svc/Call"), strings.NewReader(""), map[string]string{
			"content-type": tt.contentType, "grpc-timeout": tt.grpcTimeout,
		})
		if status != 200 || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s: got %d, upstream saw:\n%s\nwant %q", tt.contentType, tt.grpcTimeout, status, body, tt.want)
		}
	}
}
