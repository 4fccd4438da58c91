package cluster

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// membershipChanged reports whether a host set update added or removed a
// host (by address): what makes Envoy's cluster manager drain every
// host's connection pools under
// common_lb_config.close_connections_on_host_set_change. A change of
// health, weight or metadata alone does not.
func membershipChanged(old, hosts []*upstream.Host) bool {
	if len(old) != len(hosts) {
		return true
	}
	before := make(map[string]int, len(old))
	for _, h := range old {
		before[h.Address]++
	}
	for _, h := range hosts {
		if before[h.Address] == 0 {
			return true
		}
		before[h.Address]--
	}
	return false
}

// drainAllHosts drains the connections of every host, as Envoy's
// close_connections_on_host_set_change does on a membership change: the
// idle HTTP/1.1 connections close at once, the lent ones when their
// request ends (instead of being lent again), so that later requests
// connect afresh. The TCP proxy's connections are left to finish, as
// Envoy's TCP pools' active connections are; HTTP/2 connections lose
// their idle ones (Go's transport cannot drain a busy connection).
func (c *Cluster) drainAllHosts(hs *hostSet) {
	c.connsMu.Lock()
	for tc := range c.conns {
		if tc.pool != nil {
			tc.draining.Store(true)
		}
	}
	c.connsMu.Unlock()
	// After the marks: a connection released meanwhile went idle, and
	// closes here.
	for _, p := range hs.h1.all() {
		p.closeIdle()
	}
	if c.h2 != nil {
		c.closeIdleHTTP2()
	}
}
