package cluster

import (
	"testing"
	"time"
)

// BenchmarkHTTP1IdleReuse measures lending an idle connection and taking
// it back, the pool's share of every keep-alive request: on a busy
// connection (lent again within probeWindow, no probe) and on one idle
// longer (probed with a system call).
func BenchmarkHTTP1IdleReuse(b *testing.B) {
	for _, bc := range []struct {
		name string
		step time.Duration // clock step before each loan
	}{
		{"busy", 0},
		{"probed", probeWindow},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := newUpstreamServer(b, nil)
			m, _, clock := newTestManager(b, clusterFor("", srv.port()))
			c := m.Cluster("up")
			h := c.PickHost(nil)
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				clock.t = clock.t.Add(bc.step)
				conn, err := c.AcquireHTTP1(ctx, h)
				if err != nil {
					b.Fatal(err)
				}
				c.ReleaseHTTP1(conn, true)
			}
		})
	}
}
