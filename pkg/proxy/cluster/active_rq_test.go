package cluster

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// answerOK reads requests on c and answers each with "ok" until the
// client closes.
func answerOK(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_ = req.Body.Close()
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// activeRqCounts reads the upstream_cx_destroy*_with_active_rq counters.
func activeRqCounts(store *stats.Store) [3]uint64 {
	return [3]uint64{
		store.Counter("cluster.up.upstream_cx_destroy_with_active_rq").Value(),
		store.Counter("cluster.up.upstream_cx_destroy_local_with_active_rq").Value(),
		store.Counter("cluster.up.upstream_cx_destroy_remote_with_active_rq").Value(),
	}
}

// TestDestroyWithActiveRqHTTP1: an HTTP/1.1 connection released unusable
// before its response was read whole counts in
// upstream_cx_destroy_with_active_rq, split by who ended it; one whose
// response was read whole (Answered) does not, though it closes.
func TestDestroyWithActiveRqHTTP1(t *testing.T) {
	port := loopbackServer(t, answerOK)
	m, store, _ := newTestManager(t, clusterFor("", port))
	c := m.Cluster("up")
	h := c.PickHost(nil)

	// Answered, then closed (say, "connection: close"): no request on it.
	conn, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	roundTrip(t, conn)
	conn.Answered = true
	c.ReleaseHTTP1(conn, false)
	if got := activeRqCounts(store); got != [3]uint64{} {
		t.Fatalf("after an answered request: with_active_rq, local, remote = %v, want none", got)
	}

	// The request sent, its response never read: the proxy cut it.
	conn, err = c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: up\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.ReleaseHTTP1(conn, false)
	if got, want := activeRqCounts(store), [3]uint64{1, 1, 0}; got != want {
		t.Fatalf("after a cut request: with_active_rq, local, remote = %v, want %v", got, want)
	}

	// A connection closed while lent (the connection manager closes
	// it when its client goes away) had a request on it too.
	conn, err = c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	c.ReleaseHTTP1(conn, false)
	if got, want := activeRqCounts(store), [3]uint64{2, 2, 0}; got != want {
		t.Fatalf("after a close while lent: with_active_rq, local, remote = %v, want %v", got, want)
	}
}

// TestDestroyRemoteWithActiveRqHTTP1: a host that closes the connection
// instead of answering counts in upstream_cx_destroy_remote_with_active_rq.
func TestDestroyRemoteWithActiveRqHTTP1(t *testing.T) {
	port := loopbackServer(t, func(c net.Conn) {
		// Reads the request, then closes without a word.
		_, _ = http.ReadRequest(bufio.NewReader(c))
		_ = c.Close()
	})
	m, store, _ := newTestManager(t, clusterFor("", port))
	c := m.Cluster("up")
	conn, err := c.AcquireHTTP1(t.Context(), c.PickHost(nil))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: up\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := http.ReadResponse(conn.R, nil); err == nil {
		t.Fatal("the host answered")
	}
	c.ReleaseHTTP1(conn, false)
	if got, want := activeRqCounts(store), [3]uint64{1, 0, 1}; got != want {
		t.Fatalf("with_active_rq, local, remote = %v, want %v", got, want)
	}
}

// TestRqPerCxHTTP1: a connection that carried two requests records 2 in
// upstream_rq_per_cx when it closes.
func TestRqPerCxHTTP1(t *testing.T) {
	port := loopbackServer(t, answerOK)
	m, store, _ := newTestManager(t, clusterFor("", port))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	for i := range 2 {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		roundTrip(t, conn)
		conn.Answered = true
		c.ReleaseHTTP1(conn, i == 0)
	}
	if got := store.Counter("cluster.up.upstream_cx_total").Value(); got != 1 {
		t.Fatalf("upstream_cx_total = %d, want 1 (the second request reuses the connection)", got)
	}
	hist := store.HistogramWithUnit("cluster.up.upstream_rq_per_cx", stats.UnitUnspecified)
	store.MergeHistograms()
	st := hist.CumulativeStatistics()
	if st.SampleCount != 1 || len(st.Bins) != 1 || st.Bins[0].LowerBound > 2 || st.Bins[0].LowerBound+st.Bins[0].Width <= 2 {
		t.Fatalf("upstream_rq_per_cx: %d samples in bins %+v, want one sample of 2", st.SampleCount, st.Bins)
	}
}
