package cluster

// AcquireSession takes a unit of the cluster's max_connections circuit
// breaker (DEFAULT priority) for an upstream flow the cluster does not
// open itself: a UDP proxy session, which Envoy counts as a connection.
// At the limit it counts upstream_cx_overflow and returns false. A unit
// taken is given back with ReleaseSession.
func (c *Cluster) AcquireSession() bool {
	if !c.breakers().cx.tryAcquire() {
		c.extraCounter(extraCxOverflow).Inc()
		return false
	}
	return true
}

// ReleaseSession gives back a unit AcquireSession took.
func (c *Cluster) ReleaseSession() { c.releaseConnSlot(&c.breakers().cx) }

// HostsVersion changes whenever the cluster's set of hosts does (an EDS,
// DNS or CDS update): comparable with ==. An aggregate cluster's hosts
// are its listed clusters', so its version never changes.
func (c *Cluster) HostsVersion() any {
	if c.Delegates() {
		return nil
	}
	return c.set.Load()
}

// HasHost reports whether a host of the address is one of the cluster's
// hosts now (always true for an aggregate cluster, see HostsVersion).
func (c *Cluster) HasHost(address string) bool {
	if c.Delegates() {
		return true
	}
	for _, h := range c.set.Load().hosts {
		if h.Address == address {
			return true
		}
	}
	return false
}
