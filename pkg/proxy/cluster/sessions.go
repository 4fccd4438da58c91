package cluster

// AcquireSession takes a unit of the cluster's max_connections circuit
// breaker (DEFAULT priority) for an upstream flow the cluster does not
// open itself: a UDP proxy session, which Envoy counts as a connection.
// At the limit it counts upstream_cx_overflow and returns false. A unit
// taken is given back with ReleaseSession.
func (c *Cluster) AcquireSession() bool {
	if !c.breakers().cx.tryAcquire() {
		c.extra.cxOverflow.Inc()
		return false
	}
	return true
}

// ReleaseSession gives back a unit AcquireSession took.
func (c *Cluster) ReleaseSession() { c.releaseConnSlot(c.breakers().cx) }
