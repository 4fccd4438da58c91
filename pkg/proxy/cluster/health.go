package cluster

// HealthChanged rebuilds the cluster's load balancer from its current
// hosts after the run-time health of one of them changed (active health
// checking, outlier detection): the balancer reads health only when it is
// built, so that picking stays lock-free. The membership gauges follow.
// A change of hosts racing with it is serialized by updateMu.
func (c *Cluster) HealthChanged() {
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	hs := c.set.Load()
	if hs == nil {
		return
	}
	c.storeBalancer(hs, nil, nil)
	c.publishMembership(hs, false)
}
