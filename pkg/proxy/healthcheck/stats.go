package healthcheck

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// checkerStats are Envoy's cluster.<name>.health_check.* stats.
type checkerStats struct {
	attempt        *stats.Counter
	success        *stats.Counter
	failure        *stats.Counter
	passiveFailure *stats.Counter
	networkFailure *stats.Counter
	verifyCluster  *stats.Counter
	healthy        *stats.Gauge
	degraded       *stats.Gauge
}

// newCheckerStats creates the stats under scope (the cluster's).
func newCheckerStats(scope stats.Scope) checkerStats {
	s := scope.Scope("health_check.")
	return checkerStats{
		attempt:        s.Counter("attempt"),
		success:        s.Counter("success"),
		failure:        s.Counter("failure"),
		passiveFailure: s.Counter("passive_failure"),
		networkFailure: s.Counter("network_failure"),
		verifyCluster:  s.Counter("verify_cluster"),
		healthy:        s.Gauge("healthy"),
		degraded:       s.Gauge("degraded"),
	}
}
