package ratelimit

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// holding is a rate limit service that holds each call until release is
// closed (then answers OK) or the caller cancels it.
type holding struct {
	rlsv3.UnimplementedRateLimitServiceServer
	started, cancelled, release chan struct{}
}

func (h *holding) ShouldRateLimit(ctx context.Context, _ *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	h.started <- struct{}{}
	select {
	case <-ctx.Done():
		close(h.cancelled)
		return nil, ctx.Err()
	case <-h.release:
		return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}, nil
	}
}

// sockConn is an accepted socket as a listener hands it to a filter: a
// netfilter.Conn whose NetConn is the socket.
type sockConn struct{ net.Conn }

func (sockConn) OnClose(func()) {}

func (c sockConn) NetConn() net.Conn { return c.Conn }

// startHolding serves a holding service and returns it with its address.
func startHolding(t *testing.T) (*holding, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &holding{started: make(chan struct{}, 1), cancelled: make(chan struct{}), release: make(chan struct{})}
	srv := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(srv, h)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return h, ln.Addr().String()
}

// connPair returns both ends of a loopback TCP connection: the client's
// and the accepted one.
func connPair(t *testing.T) (client, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if accepted, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = accepted.Close() })
	return client, accepted
}

// within waits for ch, failing the test after a generous bound.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

const holdCfg = `{"stat_prefix": "s", "domain": "d", "timeout": "60s", SERVICE, "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`

// heldCallWithEarlyBytes starts the filter on a new connection whose call
// the service holds, and has the client send "early bytes" meanwhile. It
// returns the service, the store, both ends of the connection and where
// OnNewConnection's refusal arrives.
func heldCallWithEarlyBytes(t *testing.T) (*holding, *stats.Store, net.Conn, net.Conn, chan *netfilter.Refusal) {
	t.Helper()
	h, target := startHolding(t)
	f, store, err := build(t, holdCfg, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, accepted := connPair(t)
	refusal := make(chan *netfilter.Refusal, 1)
	go func() { refusal <- f.OnNewConnection(sockConn{accepted}) }()
	within(t, h.started, "the call")
	if _, err := client.Write([]byte("early bytes")); err != nil {
		t.Fatal(err)
	}
	return h, store, client, accepted, refusal
}

// TestClientLeavesDuringCall checks that a client that sends some bytes
// and closes while the service holds the call cancels the call, and that,
// as in Envoy, only total and active count it.
func TestClientLeavesDuringCall(t *testing.T) {
	h, store, client, _, refusal := heldCallWithEarlyBytes(t)
	_ = client.Close()
	within(t, h.cancelled, "the call's cancellation")
	var r *netfilter.Refusal
	select {
	case r = <-refusal:
	case <-time.After(10 * time.Second):
		t.Fatal("OnNewConnection did not return")
	}
	if r == nil || r.Reason != "" {
		t.Errorf("refusal %+v, want one without a local close reason", r)
	}
	for stat, want := range map[string]uint64{"total": 1, "ok": 0, "error": 0, "over_limit": 0, "failure_mode_allowed": 0, "cx_closed": 0} {
		if v := store.Counter("ratelimit.s." + stat).Value(); v != want {
			t.Errorf("%s = %d, want %d", stat, v, want)
		}
	}
	if v := store.Gauge("ratelimit.s.active").Value(); v != 0 {
		t.Errorf("active = %d", v)
	}
}

// TestWatchLeavesBytes checks that a call answered while the client is
// still there leaves what the client sent meanwhile to be read, with no
// read deadline left on the connection.
func TestWatchLeavesBytes(t *testing.T) {
	h, store, _, accepted, refusal := heldCallWithEarlyBytes(t)
	close(h.release)
	if r := <-refusal; r != nil {
		t.Fatalf("refusal %+v", r)
	}
	if v := store.Counter("ratelimit.s.ok").Value(); v != 1 {
		t.Errorf("ok = %d", v)
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, len("early bytes"))
		_, err := io.ReadFull(accepted, b)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(b)
	}()
	select {
	case s := <-got:
		if s != "early bytes" {
			t.Errorf("read %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bytes were not read")
	}
}
