package cluster

// trackGuardStreams has g follow its streams for c's stats, as dialHTTP2
// does.
func trackGuardStreams(g *h2GuardConn, c *Cluster) {
	g.streamStats.track(&trackedConn{c: c}, c.stats)
}
