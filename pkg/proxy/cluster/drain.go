package cluster

import "time"

// drainPoll is how often a draining cluster closes the connections that
// went idle and checks whether any is left.
const drainPoll = 100 * time.Millisecond

// drain takes a removed or replaced cluster out of service gracefully, as
// Envoy drains the connection pools of a cluster it removes: idle
// connections close at once, and a connection in use closes when its
// request (or tcp_proxy session, or HTTP/2 streams) ends instead of going
// back to a pool. Once no connection is left, the cluster's own work
// (health checks, outlier detection...) stops. It returns then, or when
// the cluster is closed.
//
// The cluster is never closed by draining: a request that found it before
// its removal may pick a host and ask for a connection any time later,
// and gets one (closed when released), as Envoy keeps a removed cluster
// for as long as a request holds it. Go's collector is the reference
// count: once no request holds the cluster, nothing of it is left open,
// and it goes.
func (c *Cluster) drain() {
	c.retired.Store(true)
	// A cluster out of service checks no host.
	c.stopHealthChecks()
	for _, p := range c.set.Load().h1.all() {
		p.retire()
	}
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		if c.h2 != nil {
			// Streams in progress keep their connections; the idle ones
			// close.
			c.closeIdleHTTP2()
		}
		c.connsMu.Lock()
		left := len(c.conns)
		c.connsMu.Unlock()
		switch {
		case c.closed.Load():
			return
		case left == 0:
			c.stopBackground()
			return
		}
		<-t.C
	}
}
