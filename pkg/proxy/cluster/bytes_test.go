package cluster

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fixedUpstream answers every request head read on a connection with
// answer, on a loopback port it returns.
func fixedUpstream(t *testing.T, answer string) int {
	t.Helper()
	return loopbackServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
}

// TestHTTP1PoolCountsBytes: the bytes of requests written and responses
// read on a pooled connection, over two loans, count in the cluster's
// upstream_cx_tx_bytes_total and upstream_cx_rx_bytes_total.
func TestHTTP1PoolCountsBytes(t *testing.T) {
	const (
		req    = "GET / HTTP/1.1\r\nHost: up\r\n\r\n"
		answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	)
	m, store, _ := newTestManager(t, clusterFor("", fixedUpstream(t, answer)))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	for range 2 {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		roundTrip(t, conn)
		c.ReleaseHTTP1(conn, true)
	}
	if got := store.Counter("cluster.up.upstream_cx_tx_bytes_total").Value(); got != 2*uint64(len(req)) {
		t.Errorf("upstream_cx_tx_bytes_total = %d, want %d", got, 2*len(req))
	}
	if got := store.Counter("cluster.up.upstream_cx_rx_bytes_total").Value(); got != 2*uint64(len(answer)) {
		t.Errorf("upstream_cx_rx_bytes_total = %d, want %d", got, 2*len(answer))
	}
}

// TestConnectHostCountsBytes: a connection from ConnectHost (the TCP
// proxy's) counts what is written to it, by Write and by ReadFrom, and
// what is read from it.
func TestConnectHostCountsBytes(t *testing.T) {
	port := loopbackServer(t, echoConn)
	m, store, _ := newTestManager(t, clusterFor("", port))
	c := m.Cluster("up")
	conn, err := c.ConnectHost(t.Context(), c.PickHost(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100_000)
	if _, err := conn.(io.ReaderFrom).ReadFrom(strings.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil || !bytes.Equal(got, []byte("hello"+big)) {
		t.Fatalf("echo: %d bytes, %v; want %d", len(got), err, 5+len(big))
	}
	want := uint64(5 + len(big))
	if n := store.Counter("cluster.up.upstream_cx_tx_bytes_total").Value(); n != want {
		t.Errorf("upstream_cx_tx_bytes_total = %d, want %d", n, want)
	}
	if n := store.Counter("cluster.up.upstream_cx_rx_bytes_total").Value(); n != want {
		t.Errorf("upstream_cx_rx_bytes_total = %d, want %d", n, want)
	}
	for _, g := range []string{"cluster.up.upstream_cx_rx_bytes_buffered", "cluster.up.upstream_cx_tx_bytes_buffered"} {
		if v := store.Gauge(g).Value(); v != 0 {
			t.Errorf("%s = %d, want 0", g, v)
		}
	}
}
