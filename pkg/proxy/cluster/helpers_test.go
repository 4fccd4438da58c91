package cluster

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// parseClusters reads a YAML list of clusters, as static_resources.clusters
// holds them.
func parseClusters(t testing.TB, src string) []*clusterv3.Cluster {
	t.Helper()
	var items []any
	if err := yaml.Unmarshal([]byte(src), &items); err != nil {
		t.Fatalf("parse YAML: %v", err)
	}
	var out []*clusterv3.Cluster
	for _, item := range items {
		js, err := yaml.Marshal(item)
		if err != nil {
			t.Fatalf("re-encode cluster: %v", err)
		}
		js, err = yaml.YAMLToJSON(js)
		if err != nil {
			t.Fatalf("cluster to JSON: %v", err)
		}
		c := &clusterv3.Cluster{}
		if err := protojson.Unmarshal(js, c); err != nil {
			t.Fatalf("decode cluster: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// errorLines splits a joined error into its lines (nil: none).
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// newTestManager builds clusters with a fresh store, a deterministic
// random source (0, 1, 2...) and a fake clock.
func newTestManager(t testing.TB, src string, configure ...func(*Options)) (*Manager, *stats.Store, *fakeClock) {
	t.Helper()
	store := stats.NewStore()
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	var n uint64
	o := Options{
		Stats: store,
		Now:   clock.now,
		Rand: func() uint64 {
			v := n
			n++
			return v
		},
	}
	for _, c := range configure {
		c(&o)
	}
	m, err := NewManager(parseClusters(t, src), o)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(m.Close)
	return m, store, clock
}

// configErrors checks that every part of a joined error is a
// *bootstrap.FieldError.
func configErrors(t *testing.T, err error) {
	t.Helper()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %v is not a joined error", err)
	}
	for _, e := range joined.Unwrap() {
		var ce *bootstrap.FieldError
		if !errors.As(e, &ce) {
			t.Errorf("%q is not a *bootstrap.FieldError", e)
		}
	}
}

// loopbackServer serves every connection accepted on a loopback port with
// handle, each on a goroutine of its own with a 10 s deadline, closing it
// when handle returns; it stops when the test ends and returns the port.
func loopbackServer(t testing.TB, handle func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveListener(t, ln, handle)
}

// serveListener is loopbackServer on a listener of the caller's (a TLS
// one, say).
func serveListener(t testing.TB, ln net.Listener, handle func(net.Conn)) int {
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				handle(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// echoConn writes back what it reads until the peer's end of stream.
func echoConn(c net.Conn) { _, _ = io.Copy(c, c) }

// acquired is the outcome of an acquisition acquireAsync runs.
type acquired struct {
	conn *upstream.Conn
	err  error
}

// acquireAsync asks c for an HTTP/1.1 connection to h on its own
// goroutine (a request that will wait pending); the channel gets the
// outcome.
func acquireAsync(t testing.TB, c *Cluster, h *upstream.Host) <-chan acquired {
	out := make(chan acquired, 1)
	go func() {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		out <- acquired{conn, err}
	}()
	return out
}

// handOver serves a request on first and releases it, then checks that
// the request waiting on waiter gets that very connection, and serves
// and releases it too.
func handOver(t *testing.T, c *Cluster, first *upstream.Conn, waiter <-chan acquired) {
	t.Helper()
	roundTrip(t, first)
	c.ReleaseHTTP1(first, true)
	r := <-waiter
	if r.err != nil || r.conn != first {
		t.Fatalf("the waiting request got %p, %v; want the released connection %p", r.conn, r.err, first)
	}
	roundTrip(t, r.conn)
	c.ReleaseHTTP1(r.conn, true)
}

// idleAndLent opens two HTTP/1.1 connections to h and releases one: it
// returns the one still lent; the other waits idle in the pool.
func idleAndLent(t testing.TB, c *Cluster, h *upstream.Host) *upstream.Conn {
	t.Helper()
	idle, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	lent, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	c.ReleaseHTTP1(idle, true)
	return lent
}
