package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// awaitDrained waits until the manager no longer drains c: its last
// connection closed and its own work stopped.
func awaitDrained(t *testing.T, m *Manager, c *Cluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.dyn.mu.Lock()
		_, draining := m.dyn.draining[c]
		m.dyn.mu.Unlock()
		if !draining {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the removed cluster never finished draining")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRemovedClusterServesRequestsThatHoldIt: a cluster removed by
// discovery drains, and a request that found it before the removal can
// still pick a host and get a connection any time later, however long
// after the drain ended (as Envoy keeps a removed cluster while a request
// holds it): over HTTP/1.1, a plain connection (tcp_proxy) and HTTP/2.
// Each connection closes once its request is done.
func TestRemovedClusterServesRequestsThatHoldIt(t *testing.T) {
	// ended receives each upstream connection's end, seen by the server.
	ended := make(chan struct{}, 4)
	port := loopbackServer(t, func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c)
		ended <- struct{}{}
	})
	h2port, h2conns := newH2CServer(t)
	m, store, clock := newTestManager(t, `[]`)
	cfgs := parseClusters(t, fmt.Sprintf(`
- name: h1
  connect_timeout: 1s
  outlier_detection: {}
  load_assignment: {cluster_name: h1, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}
- name: h2
  connect_timeout: 1s
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}
  load_assignment: {cluster_name: h2, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}
`, port, h2port))
	if err := m.ApplyDiscovered(cfgs, "v1", clock.now()); err != nil {
		t.Fatal(err)
	}
	// The requests find their clusters and pick their hosts...
	c1, c2 := m.Cluster("h1"), m.Cluster("h2")
	h1, h2 := c1.PickHost(nil), c2.PickHost(nil)
	if h1 == nil || h2 == nil {
		t.Fatal("no host picked")
	}
	// ...then the clusters are removed, and drain to the end.
	if err := m.ApplyDiscovered(nil, "v2", clock.now()); err != nil {
		t.Fatal(err)
	}
	if m.Cluster("h1") != nil || m.Cluster("h2") != nil {
		t.Fatal("the removed clusters are still active")
	}
	awaitDrained(t, m, c1)
	awaitDrained(t, m, c2)
	if c1.isClosed() || c2.isClosed() {
		t.Fatal("a drained cluster was closed: the requests holding it would fail")
	}

	// HTTP/1.1: a connection, closed when released rather than pooled.
	conn, err := c1.AcquireHTTP1(t.Context(), h1)
	if err != nil {
		t.Fatalf("a request holding the removed cluster gets no HTTP/1.1 connection: %v", err)
	}
	if got := store.Gauge("cluster.h1.upstream_cx_active").Value(); got != 1 {
		t.Errorf("upstream_cx_active = %d with the request's connection open, want 1", got)
	}
	c1.ReleaseHTTP1(conn, true)
	awaitEnd(t, ended, "the released HTTP/1.1 connection of a removed cluster")

	// A plain connection, as tcp_proxy opens; its owner closes it.
	nc, err := c1.ConnectHost(t.Context(), h1)
	if err != nil {
		t.Fatalf("a session holding the removed cluster cannot connect: %v", err)
	}
	_ = nc.Close()
	awaitEnd(t, ended, "the plain connection")
	if got := store.Gauge("cluster.h1.upstream_cx_active").Value(); got != 0 {
		t.Errorf("upstream_cx_active = %d once the requests ended, want 0", got)
	}

	// HTTP/2: the request goes, and its connection closes once it ends.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/late", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c2.RoundTripHTTP2(req, h2)
	if err != nil {
		t.Fatalf("a request holding the removed cluster fails over HTTP/2: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || h2conns.Load() != 1 {
		t.Errorf("status %d over %d connections, want 200 over 1", resp.StatusCode, h2conns.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for h2.Stats.CxActive.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := h2.Stats.CxActive.Load(); got != 0 {
		t.Errorf("the removed cluster keeps %d HTTP/2 connections after its last request, want 0", got)
	}
}

// awaitEnd waits for the upstream to see a connection end.
func awaitEnd(t *testing.T, ended <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s never closed", what)
	}
}
