package cluster

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestDestroyLocalRemote: a connection closed by the proxy counts in
// upstream_cx_destroy_local; one closed after the host ended it (the
// proxy read the end of its stream) in upstream_cx_destroy_remote.
func TestDestroyLocalRemote(t *testing.T) {
	port := loopbackServer(t, echoConn)
	m, store, _ := newTestManager(t, clusterFor("", port))
	c := m.Cluster("up")
	h := c.PickHost(nil)

	local, err := c.ConnectHost(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	_ = local.Close()

	remote, err := c.ConnectHost(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	_ = remote.SetDeadline(time.Now().Add(10 * time.Second))
	if err := remote.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(remote); err != nil { // up to the echo's end
		t.Fatal(err)
	}
	_ = remote.Close()

	for name, want := range map[string]uint64{"destroy": 2, "destroy_local": 1, "destroy_remote": 1} {
		if got := store.Counter("cluster.up.upstream_cx_" + name).Value(); got != want {
			t.Errorf("upstream_cx_%s = %d, want %d", name, got, want)
		}
	}
}

// TestDestroyRemoteIdle: an idle pooled connection that the host closed,
// found by the probe before its next loan, counts in
// upstream_cx_destroy_remote.
func TestDestroyRemoteIdle(t *testing.T) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	closed := make(chan struct{}, 4)
	port := loopbackServer(t, func(c net.Conn) {
		// One answer, then a close, as an upstream's idle timeout
		// would.
		buf := make([]byte, 1024)
		if _, err := c.Read(buf); err == nil {
			_, _ = io.WriteString(c, answer)
		}
		_ = c.Close()
		closed <- struct{}{}
	})
	m, store, clk := newTestManager(t, clusterFor("", port))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	conn, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	roundTrip(t, conn)
	c.ReleaseHTTP1(conn, true)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream did not close")
	}
	// Loopback delivers the FIN at once; the pause is a margin for a
	// loaded machine. The probe runs once the loan is older than its
	// window.
	time.Sleep(100 * time.Millisecond)
	clk.t = clk.t.Add(time.Second)
	again, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if again == conn {
		t.Fatal("the closed connection was lent again")
	}
	c.ReleaseHTTP1(again, false)
	if got := store.Counter("cluster.up.upstream_cx_destroy_remote").Value(); got != 1 {
		t.Errorf("upstream_cx_destroy_remote = %d, want 1", got)
	}
	if got := store.Counter("cluster.up.upstream_cx_destroy_local").Value(); got != 1 {
		t.Errorf("upstream_cx_destroy_local = %d, want 1 (the second connection)", got)
	}
}
