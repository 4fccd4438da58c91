package cluster

import "time"

// drainPoll is how often a draining cluster closes the connections that
// went idle and checks whether any is left.
const drainPoll = 100 * time.Millisecond

// drainQuiet is how long a draining cluster must have had no connection
// before it closes. A request looks its cluster up and asks it for a
// connection a moment later: the cluster stays usable for that moment, so
// that a request which found it just before its removal still gets its
// connection (which closes when the request ends).
const drainQuiet = time.Second

// drain takes a removed or replaced cluster out of service gracefully, as
// Envoy drains the connection pools of a cluster it removes: idle
// connections close at once, a connection in use closes when its request
// (or tcp_proxy session) ends instead of going back to a pool, and once no
// connection has been left for drainQuiet the cluster is closed. Requests
// that hold the cluster complete; the manager no longer hands it out. It
// returns once the cluster is closed.
func (c *Cluster) drain() {
	// A cluster out of service checks no host.
	c.stopHealthChecks()
	for _, p := range c.set.Load().h1.all() {
		p.retire()
	}
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	var quietSince time.Time
	for {
		if c.h2 != nil {
			// Streams in progress keep their connections; the idle ones
			// close.
			c.closeIdleHTTP2()
		}
		c.connsMu.Lock()
		left := len(c.conns)
		c.connsMu.Unlock()
		now := time.Now()
		switch {
		case c.closed.Load():
			return
		case left > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = now
		case now.Sub(quietSince) >= drainQuiet:
			c.Close()
			return
		}
		<-t.C
	}
}
