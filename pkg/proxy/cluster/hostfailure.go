package cluster

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// hostFailed follows a host's health failure (active health checking
// failed it, or outlier detection ejected it) as Envoy's
// onHostHealthFailure does: the host's HTTP/1.1 connections drain (the
// idle ones close at once, the ones lent to requests close when their
// request ends instead of being lent again), so that the host, should it
// come back, gets fresh connections, which may take a better path than
// the failed ones (an ECMP flow, a NAT entry). With
// close_connections_on_host_health_failure the host's ConnectHost
// connections (the TCP proxy's, upgrades') close at once: in Envoy too the
// option closes the TCP pools' connections and only drains the HTTP
// ones. HTTP/2 connections are left alone: Go's transport cannot drain
// one host's connections. The health checker
// and the outlier detector call it outside their locks.
func (c *Cluster) hostFailed(h *upstream.Host) {
	c.connsMu.Lock()
	var closing []*trackedConn
	for tc := range c.conns {
		if tc.host != h && tc.host.Address != h.Address {
			continue
		}
		switch {
		case tc.pool != nil:
			tc.draining.Store(true)
		case tc.tcpPool.Load() && c.settings.closeOnHealthFailure:
			closing = append(closing, tc)
		}
	}
	c.connsMu.Unlock()
	// After the marks: a connection released meanwhile went idle, and
	// closes here.
	if hs := c.set.Load(); hs != nil {
		if p := hs.h1.get(h); p != nil {
			p.closeIdle()
		}
	}
	for _, tc := range closing {
		_ = tc.Close()
	}
}
