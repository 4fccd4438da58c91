package cluster

import (
	"net"
	"testing"
)

// TestReadBufferSizes: the buffer lent with a connection and the one taken
// once its response is readable, by per_connection_buffer_limit_bytes: the
// limit makes either smaller, never below the smallest readable head, and
// the second is never smaller than the first.
func TestReadBufferSizes(t *testing.T) {
	tests := []struct {
		limit        uint32
		lent, toRead int
	}{
		{0, 16 << 10, 32 << 10},
		{1 << 20, 16 << 10, 32 << 10},
		{32 << 10, 16 << 10, 32 << 10},
		{20000, 16 << 10, 20000},
		{16 << 10, 16 << 10, 16 << 10},
		{8192, 8192, 8192},
		{100, 4 << 10, 4 << 10},
	}
	for _, tc := range tests {
		s := &settings{bufferLimit: tc.limit}
		if got := s.readBufferSize(); got != tc.lent {
			t.Errorf("limit %d: read buffer %d, want %d", tc.limit, got, tc.lent)
		}
		if got := s.responseBufferSize(); got != tc.toRead {
			t.Errorf("limit %d: response read buffer %d, want %d", tc.limit, got, tc.toRead)
		}
	}
}

// TestResponseReadBuffers: a lent HTTP/1.1 connection lends its read
// buffer (upstream.ReadBuffers): the one it came with goes back, one of
// responseReadBuffer bytes reads the response, counted in
// upstream_cx_rx_bytes_total as every read is, and the connection goes
// back to its pool giving that buffer back, so that each loan comes with
// a read buffer of the ordinary size.
func TestResponseReadBuffers(t *testing.T) {
	srv := newUpstreamServer(t, func(net.Conn) bool { return true })
	m, store, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	for i := range 3 {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if conn.Buffers == nil || conn.R == nil || conn.R.Size() != defaultReadBuffer {
			t.Fatalf("loan %d: buffers %v, read buffer %v, want one of %d bytes", i, conn.Buffers, conn.R, defaultReadBuffer)
		}
		conn.Buffers.PutReader(conn.R)
		conn.R = conn.Buffers.ResponseReader()
		if n := conn.R.Size(); n != responseReadBuffer {
			t.Fatalf("loan %d: response read buffer of %d bytes, want %d", i, n, responseReadBuffer)
		}
		roundTrip(t, conn)
		c.ReleaseHTTP1(conn, true)
		if conn.R != nil {
			t.Fatalf("loan %d: the connection released to its pool kept its read buffer", i)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1 reused", n)
	}
	if got := store.Counter("cluster.up.upstream_cx_rx_bytes_total").Value(); got == 0 {
		t.Error("upstream_cx_rx_bytes_total = 0 after the responses")
	}
}
