package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// adminStatsServer serves h on loopback with the admin stats hooks, as
// startAdmin does.
func adminStatsServer(t *testing.T, h http.Handler) (*stats.Store, *httptest.Server) {
	t.Helper()
	st := stats.NewStore()
	a := newAdminStats(st, time.Now)
	srv := httptest.NewUnstartedServer(a.wrap(h))
	srv.Config.ConnContext = a.connContext
	srv.Config.ConnState = a.connState
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = protocols
	srv.Start()
	t.Cleanup(srv.Close)
	return st, srv
}

// waitGauge waits (bounded) for a gauge to reach want: connection closes
// are seen by the server a moment after the client closes.
func waitGauge(t *testing.T, g *stats.Gauge, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Value() != want {
		if time.Now().After(deadline) {
			t.Fatalf("gauge stuck at %d, want %d", g.Value(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func get(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

func TestAdminStatsCountRequests(t *testing.T) {
	active := make(chan int64, 1)
	var st *stats.Store
	st, srv := adminStatsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = io.WriteString(w, "ok")
		case "/silent":
			// Writes nothing: net/http answers 200.
		case "/missing":
			http.NotFound(w, r)
		case "/continue":
			w.WriteHeader(http.StatusContinue)
			w.WriteHeader(http.StatusBadRequest)
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/active":
			active <- st.Gauge("http.admin.downstream_rq_active").Value()
		}
	}))
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	for _, p := range []string{"/ok", "/silent", "/missing", "/continue", "/fail", "/active"} {
		get(t, client, srv.URL+p)
	}
	if got := <-active; got != 1 {
		t.Errorf("downstream_rq_active during a request = %d, want 1", got)
	}
	counters := map[string]uint64{
		"http.admin.downstream_rq_total":                    6,
		"http.admin.downstream_rq_http1_total":              6,
		"http.admin.downstream_rq_completed":                6,
		"http.admin.downstream_rq_1xx":                      0,
		"http.admin.downstream_rq_2xx":                      3,
		"http.admin.downstream_rq_4xx":                      2,
		"http.admin.downstream_rq_5xx":                      1,
		"listener.admin.http.admin.downstream_rq_2xx":       3,
		"listener.admin.http.admin.downstream_rq_4xx":       2,
		"listener.admin.http.admin.downstream_rq_5xx":       1,
		"listener.admin.http.admin.downstream_rq_completed": 6,
		"http.admin.downstream_cx_total":                    1, // keep-alive: one connection
		"http.admin.downstream_cx_http1_total":              1,
		"listener.admin.downstream_cx_total":                1,
		"listener.admin.main_thread.downstream_cx_total":    1,
		"http.admin.downstream_cx_http2_total":              0,
		"http.admin.downstream_rq_http2_total":              0,
		"http.admin.downstream_cx_destroy":                  0,
		"listener.admin.downstream_cx_destroy":              0,
	}
	for name, want := range counters {
		if got := st.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := st.Gauge("http.admin.downstream_rq_active").Value(); got != 0 {
		t.Errorf("downstream_rq_active after the requests = %d", got)
	}
	for _, name := range []string{"http.admin.downstream_cx_active", "http.admin.downstream_cx_http1_active",
		"listener.admin.downstream_cx_active", "listener.admin.main_thread.downstream_cx_active"} {
		if got := st.Gauge(name).Value(); got != 1 {
			t.Errorf("%s with an open connection = %d, want 1", name, got)
		}
	}
	st.MergeHistograms()
	if got := st.Histogram("http.admin.downstream_rq_time").CumulativeStatistics().SampleCount; got != 6 {
		t.Errorf("downstream_rq_time has %d values, want 6", got)
	}

	client.CloseIdleConnections()
	waitGauge(t, st.Gauge("http.admin.downstream_cx_active"), 0)
	for _, name := range []string{"http.admin.downstream_cx_http1_active", "listener.admin.downstream_cx_active",
		"listener.admin.main_thread.downstream_cx_active"} {
		if got := st.Gauge(name).Value(); got != 0 {
			t.Errorf("%s after close = %d, want 0", name, got)
		}
	}
	for _, name := range []string{"http.admin.downstream_cx_destroy", "listener.admin.downstream_cx_destroy"} {
		if got := st.Counter(name).Value(); got != 1 {
			t.Errorf("%s = %d, want 1", name, got)
		}
	}
	st.MergeHistograms()
	for _, name := range []string{"http.admin.downstream_cx_length_ms", "listener.admin.downstream_cx_length_ms"} {
		if got := st.Histogram(name).CumulativeStatistics().SampleCount; got != 1 {
			t.Errorf("%s has %d values, want 1", name, got)
		}
	}
}

func TestAdminStatsHTTP2(t *testing.T) {
	st, srv := adminStatsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: protocols}, Timeout: 5 * time.Second}
	get(t, client, srv.URL+"/a")
	get(t, client, srv.URL+"/b")
	for name, want := range map[string]uint64{
		"http.admin.downstream_rq_http2_total": 2,
		"http.admin.downstream_cx_http2_total": 1,
		"http.admin.downstream_rq_http1_total": 0,
	} {
		if got := st.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := st.Gauge("http.admin.downstream_cx_http2_active").Value(); got != 1 {
		t.Errorf("downstream_cx_http2_active = %d, want 1", got)
	}
	client.CloseIdleConnections()
	waitGauge(t, st.Gauge("http.admin.downstream_cx_http2_active"), 0)
}

// TestAdminStatsKeepStreaming: a streaming handler can still flush and set
// deadlines through the counting wrapper.
func TestAdminStatsKeepStreaming(t *testing.T) {
	flushed := make(chan error, 2)
	_, srv := adminStatsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, "data: x\n\n")
		flushed <- rc.Flush()
		flushed <- rc.SetWriteDeadline(time.Now().Add(time.Second))
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	for range 2 {
		if err := <-flushed; err != nil {
			t.Errorf("through the wrapper: %v", err)
		}
	}
}

// TestAdminStatsHijack: a hijacked connection leaves the gauges.
func TestAdminStatsHijack(t *testing.T) {
	st, srv := adminStatsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = c.Close()
	}))
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(c)
	waitGauge(t, st.Gauge("http.admin.downstream_cx_active"), 0)
	if got := st.Counter("http.admin.downstream_cx_destroy").Value(); got != 1 {
		t.Errorf("downstream_cx_destroy = %d, want 1", got)
	}
}
