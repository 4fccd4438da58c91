package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
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
// back to its pool keeping that buffer for its next loan; it gives it
// back once idle through a sweep period (see buffer_sweep.go), and the
// loan after that takes a fresh one. The test runs the sweeps itself.
func TestResponseReadBuffers(t *testing.T) {
	srv := newUpstreamServer(t, func(net.Conn) bool { return true })
	m, store, clock := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	// No sweep is scheduled but the test's.
	c.bufSweeping.Store(true)
	h := c.PickHost(nil)
	var idle *upstream.Conn
	for i, want := range []int{defaultReadBuffer, responseReadBuffer, responseReadBuffer, defaultReadBuffer} {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if conn.Buffers == nil || conn.R == nil || conn.R.Size() != want {
			t.Fatalf("loan %d: buffers %v, read buffer %v, want one of %d bytes", i, conn.Buffers, conn.R, want)
		}
		conn.Buffers.PutReader(conn.R)
		conn.R = conn.Buffers.ResponseReader()
		if n := conn.R.Size(); n != responseReadBuffer {
			t.Fatalf("loan %d: response read buffer of %d bytes, want %d", i, n, responseReadBuffer)
		}
		roundTrip(t, conn)
		c.ReleaseHTTP1(conn, true)
		if conn.R == nil {
			t.Fatalf("loan %d: the released connection gave its read buffer back at once", i)
		}
		idle = conn
		switch i {
		case 1:
			// A sweep before the period is over leaves it.
			clock.t = clock.t.Add(bufferSweepEvery - time.Millisecond)
			c.sweepBuffers()
			if idle.R == nil {
				t.Fatal("the sweep took the buffer of a connection idle for less than a period")
			}
		case 2:
			clock.t = clock.t.Add(bufferSweepEvery)
			c.sweepBuffers()
			if idle.R != nil {
				t.Fatal("the sweep left the buffer of a connection idle for a whole period")
			}
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1 reused", n)
	}
	if got := store.Counter("cluster.up.upstream_cx_rx_bytes_total").Value(); got == 0 {
		t.Error("upstream_cx_rx_bytes_total = 0 after the responses")
	}
}
