package cluster

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestProbeDue(t *testing.T) {
	lent := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		elapsed time.Duration
		want    bool
	}{
		"at once":                  {0, false},
		"just inside the window":   {probeWindow - time.Nanosecond, false},
		"at the end of the window": {probeWindow, true},
		"an hour later":            {time.Hour, true},
		"clock stepped back":       {-time.Nanosecond, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := probeDue(lent, lent.Add(tc.elapsed)); got != tc.want {
				t.Errorf("probeDue after %v = %v, want %v", tc.elapsed, got, tc.want)
			}
		})
	}
}

// TestHTTP1PoolProbeWindow: the upstream closes the connection after each
// response. A loan within probeWindow of the previous one skips the probe,
// so the dead connection is lent; the borrower sees the end of stream
// before any answer on a reused connection, exactly what the connection
// manager sends a body-less request again for, and the next acquisition
// gets a fresh connection that works. A later loan probes, and the dead
// connection is closed instead of lent.
func TestHTTP1PoolProbeWindow(t *testing.T) {
	tests := map[string]struct {
		exchange time.Duration // clock step between the first loan and its release
		idle     time.Duration // clock step between the release and the next loan
		lent     bool          // whether the dead connection is lent again
	}{
		"next loan at once":                {lent: true},
		"next loan within the window":      {exchange: probeWindow / 4, idle: probeWindow / 2, lent: true},
		"idle past the window":             {idle: probeWindow},
		"long exchange, released just now": {exchange: probeWindow},
		"clock stepped back":               {idle: -time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newUpstreamServer(t, func(net.Conn) bool { return false })
			m, store, clock := newTestManager(t, clusterFor("", srv.port()))
			c := m.Cluster("up")
			h := c.PickHost(nil)
			first, err := c.AcquireHTTP1(t.Context(), h)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, first)
			clock.t = clock.t.Add(tc.exchange)
			c.ReleaseHTTP1(first, true)
			if n := c.set.Load().h1.get(h).idleCount(); n != 1 {
				t.Fatalf("idle connections = %d, want 1", n)
			}
			// The upstream's close has arrived: a probe would refuse
			// the connection.
			waitUnusable(t, c.set.Load().h1.get(h).shares[0].idle[0])
			clock.t = clock.t.Add(tc.idle)

			conn, err := c.AcquireHTTP1(t.Context(), h)
			if err != nil {
				t.Fatal(err)
			}
			if lent := conn == first; lent != tc.lent {
				t.Fatalf("dead connection lent = %v, want %v", lent, tc.lent)
			}
			if tc.lent {
				if conn.Requests != 2 {
					t.Errorf("Requests = %d, want 2 (a reused connection, which the connection manager retries on)", conn.Requests)
				}
				_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: up\r\n\r\n")
				if _, err := conn.R.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("reading the dead connection: %v, want end of stream or reset before any answer", err)
				}
				c.ReleaseHTTP1(conn, false)
				if conn, err = c.AcquireHTTP1(t.Context(), h); err != nil {
					t.Fatal(err)
				}
				if conn == first {
					t.Fatal("the connection released as not reusable was lent again")
				}
			}
			if conn.Requests != 1 {
				t.Errorf("Requests = %d on the new connection, want 1", conn.Requests)
			}
			roundTrip(t, conn)
			c.ReleaseHTTP1(conn, false)
			got := statValues(store, []string{"cluster.up.upstream_cx_total", "cluster.up.upstream_cx_destroy"}, nil)
			want := map[string]int64{"cluster.up.upstream_cx_total": 2, "cluster.up.upstream_cx_destroy": 2}
			for n, w := range want {
				if got[n] != w {
					t.Errorf("%s = %d, want %d", n, got[n], w)
				}
			}
		})
	}
}
