package cluster

import "testing"

// BenchmarkHTTP1IdleReuse measures lending an idle connection and taking
// it back, the pool's share of every keep-alive request.
func BenchmarkHTTP1IdleReuse(b *testing.B) {
	srv := newUpstreamServer(b, nil)
	m, _, _ := newTestManager(b, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost()
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		conn, err := c.AcquireHTTP1(ctx, h)
		if err != nil {
			b.Fatal(err)
		}
		c.ReleaseHTTP1(conn, true)
	}
}
