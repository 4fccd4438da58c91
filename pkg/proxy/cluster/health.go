package cluster

import "github.com/outrigger-dev/outrigger/pkg/proxy/lb"

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
	c.balancer.Store(c.newBalancer(hs, nil))
	c.publishMembership(hs, false)
}

// newBalancer builds the load balancer of a host set, reading the hosts'
// health as it is now; old is the set it replaces (nil when it rebuilds
// the same set), whose hosts keep their place in slow start.
func (c *Cluster) newBalancer(hs, old *hostSet) *lb.Balancer {
	return lb.New(hs.priorities, c.lbConfig(hs, old))
}
