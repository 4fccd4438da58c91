package admin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// countingWriter is a ResponseWriter that keeps only the size of each
// write, to see how a render reaches the connection.
type countingWriter struct {
	header http.Header
	writes []int
}

func (c *countingWriter) Header() http.Header { return c.header }
func (c *countingWriter) WriteHeader(int)     {}
func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	return len(p), nil
}

// storeWithCounters holds n used counters with long names.
func storeWithCounters(n int) *stats.Store {
	s := stats.NewStore()
	for i := range n {
		s.Counter(fmt.Sprintf("cluster.service_%06d.upstream_rq_total", i)).Inc()
	}
	return s
}

// TestStatsRenderStreams checks that a large render reaches the client in
// bounded chunks rather than as one body built in memory.
func TestStatsRenderStreams(t *testing.T) {
	src := &fakeStats{rec: &recorder{}, store: storeWithCounters(20000), useRE2: true}
	h := newStatsAdmin(t, src).Handler()
	for _, target := range []string{"/stats", "/stats?format=json", "/stats/prometheus"} {
		t.Run(target, func(t *testing.T) {
			cw := &countingWriter{header: http.Header{}}
			h.ServeHTTP(cw, httptest.NewRequest(http.MethodGet, target, nil))
			total := 0
			for _, n := range cw.writes {
				total += n
				if n > 128<<10 {
					t.Errorf("one write of %d bytes: the render was not chunked", n)
				}
			}
			if len(cw.writes) < 5 || total < 500<<10 {
				t.Errorf("%d writes, %d bytes; want a body of several chunks", len(cw.writes), total)
			}
			if cw.header.Get("Content-Length") != "" {
				t.Errorf("Content-Length %q set on a streamed render", cw.header.Get("Content-Length"))
			}
		})
	}
}

// smallBufferListener shrinks the send buffer of accepted connections, so
// that a client that stops reading blocks the server after a few kilobytes.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStatsSlowClient checks that a client that stops reading ends its own
// render once a write has waited past the write timeout, and that other
// requests are served meanwhile.
func TestStatsSlowClient(t *testing.T) {
	src := &fakeStats{rec: &recorder{}, store: storeWithCounters(50000), useRE2: true}
	f := &statsFamily{src: src, writeTimeout: 200 * time.Millisecond}
	a := newAdmin(Options{Log: (&logSink{}).logger()}, f.routes())
	var inFlight atomic.Int32
	ended := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		a.Handler().ServeHTTP(rw, hr)
		if hr.URL.Query().Has("slow") {
			ended <- struct{}{}
		}
	}))
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slow.Close() }()
	_ = slow.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(slow, "GET /stats?slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Read the status line only, then stop reading.
	if line, err := bufio.NewReader(slow).ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}

	// Another client is served while the slow render is stuck.
	resp, err := srv.Client().Get(srv.URL + "/stats?filter=service_000001%5C.")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "cluster.service_000001.upstream_rq_total: 1\n" {
		t.Errorf("concurrent request: %d %q", resp.StatusCode, body)
	}

	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatalf("the render for a client that stopped reading never ended (%d requests in flight)", inFlight.Load())
	}
}

// TestStatsDeadlineLiftedForNextRequest checks that a kept-alive
// connection does not carry a render's write deadline into its next
// request.
func TestStatsDeadlineLiftedForNextRequest(t *testing.T) {
	src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: true}
	f := &statsFamily{src: src, writeTimeout: 50 * time.Millisecond}
	a := newAdmin(Options{Log: (&logSink{}).logger()}, f.routes())
	srv := newLoopbackServer(t, a.Handler())

	get := func() (reused bool) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace),
			http.MethodGet, srv.URL+"/stats?filter=live", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != "server.live: 1\n" {
			t.Fatalf("body %q, %v", body, err)
		}
		return reused
	}
	get()
	time.Sleep(150 * time.Millisecond) // past the first render's deadline
	if !get() {
		t.Error("the second request did not reuse the kept-alive connection")
	}
}

// TestStatsFilterStopsWhenClientLeaves checks that a filtered render stops
// matching once its request is gone.
func TestStatsFilterStopsWhenClientLeaves(t *testing.T) {
	inner, err := stats.NewRE2Filter("service")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	f := stopOnDone{ctx: ctx, f: inner}
	name := []byte("cluster.service_000001.upstream_rq_total")
	if !f.Match(name) {
		t.Fatal("no match while the request is alive")
	}
	cancel()
	if f.Match(name) {
		t.Error("still matching after the request ended")
	}
}
