package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newH2CServer serves h2c (cleartext HTTP/2 with prior knowledge) on
// 127.0.0.1, answering with what it received, and counts connections.
func newH2CServer(t *testing.T) (port int, conns *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int32{}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %s host=%s accept-encoding=%q user-agent=%q body=%s",
				r.Proto, r.Method, r.URL.Path, r.Host, r.Header.Get("Accept-Encoding"), r.Header.Get("User-Agent"), body)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port, conns
}

func TestHTTP2RoundTrip(t *testing.T) {
	port, conns := newH2CServer(t)
	m, store, _ := newTestManager(t, fmt.Sprintf(`
- name: h2
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}
  load_assignment:
    cluster_name: h2
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, port))
	c := m.Cluster("h2")
	if !c.HTTP2() {
		t.Fatal("HTTP2() = false")
	}
	h := c.PickHost(nil)
	for i := range 3 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://ignored/echo", strings.NewReader(fmt.Sprint("req", i)))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "service.local"
		ua := ""
		if i == 1 {
			ua = "curl/8.0"
			req.Header.Set("User-Agent", ua)
		}
		resp, err := c.RoundTripHTTP2(req, h)
		if err != nil {
			t.Fatalf("RoundTripHTTP2: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`HTTP/2.0 POST /echo host=service.local accept-encoding="" user-agent=%q body=req%d`, ua, i)
		if string(body) != want {
			t.Errorf("response %q, want %q", body, want)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("upstream saw %d connections, want 1 (multiplexed)", got)
	}
	checks := map[string]uint64{
		"cluster.h2.upstream_cx_total":       1,
		"cluster.h2.upstream_cx_http2_total": 1,
		"cluster.h2.upstream_cx_http1_total": 0,
	}
	for n, want := range checks {
		if got := store.Counter(n).Value(); got != want {
			t.Errorf("%s = %d, want %d", n, got, want)
		}
	}
	if h.Stats.CxTotal.Load() != 1 || h.Stats.CxActive.Load() != 1 {
		t.Errorf("host cx_total %d cx_active %d, want 1 and 1", h.Stats.CxTotal.Load(), h.Stats.CxActive.Load())
	}

	m.Close()
	if got := store.Gauge("cluster.h2.upstream_cx_active").Value(); got != 0 {
		t.Errorf("upstream_cx_active = %d after Close, want 0", got)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/", nil)
	if resp, err := c.RoundTripHTTP2(req, h); err == nil {
		_ = resp.Body.Close()
		t.Error("RoundTripHTTP2 works after Close")
	}
}

func TestHTTP2ConnectFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	m, store, _ := newTestManager(t, fmt.Sprintf(`
- name: h2
  http2_protocol_options: {}
  load_assignment:
    cluster_name: h2
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, port))
	c := m.Cluster("h2")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/", nil)
	if resp, err := c.RoundTripHTTP2(req, c.PickHost(nil)); err == nil {
		_ = resp.Body.Close()
		t.Fatal("RoundTripHTTP2 to a closed port succeeded")
	}
	if got := store.Counter("cluster.h2.upstream_cx_connect_fail").Value(); got != 1 {
		t.Errorf("upstream_cx_connect_fail = %d, want 1", got)
	}
}
