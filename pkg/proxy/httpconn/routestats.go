package httpconn

import (
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// routeStats are the router's stats of a virtual cluster
// (vhost.<virtual host>.vcluster.<name>.) or of a route with a stat_prefix
// (vhost.<virtual host>.route.<stat_prefix>.), with Envoy's names. They
// count the requests that went to an upstream, as the cluster's stats do.
type routeStats struct {
	rqTotal     *stats.Counter
	rqTimeout   *stats.Counter
	rqCompleted *stats.Counter
	rqTime      *stats.Histogram
	codes       upstream.CodeCounters
	// Envoy's retry counters of the virtual cluster or route.
	retry, retrySuccess, retryOverflow, retryLimitExceeded *stats.Counter
}

// newRouteStats creates the stats under scope.
func newRouteStats(scope stats.Scope) *routeStats {
	rs := &routeStats{
		rqTotal:            scope.Counter("upstream_rq_total"),
		rqTimeout:          scope.Counter("upstream_rq_timeout"),
		rqCompleted:        scope.Counter("upstream_rq_completed"),
		rqTime:             scope.Histogram("upstream_rq_time", stats.UnitMilliseconds),
		retry:              scope.Counter("upstream_rq_retry"),
		retrySuccess:       scope.Counter("upstream_rq_retry_success"),
		retryOverflow:      scope.Counter("upstream_rq_retry_overflow"),
		retryLimitExceeded: scope.Counter("upstream_rq_retry_limit_exceeded"),
	}
	rs.codes.Init(scope)
	return rs
}

// routeLevelStats are the stats of a route table's virtual clusters and
// stat_prefix routes, by their indexes in the table, so that a request
// reaches them without a lookup by name.
type routeLevelStats struct {
	vclusters []*routeStats
	routes    []*routeStats
}

// newRouteLevelStats creates the stats of t's virtual clusters and
// stat_prefix routes. Two virtual hosts of the same name share theirs, as
// in Envoy, where the names are the stats' identity.
func newRouteLevelStats(store *stats.Store, t *router.Table) routeLevelStats {
	var rl routeLevelStats
	for _, vc := range t.VirtualClusters {
		rl.vclusters = append(rl.vclusters, newRouteStats(store.Scope("vhost."+vc.VirtualHost.Name+".vcluster."+vc.Name+".")))
	}
	for _, r := range t.StatRoutes {
		rl.routes = append(rl.routes, newRouteStats(store.Scope("vhost."+r.VirtualHost.Name+".route."+r.StatPrefix+".")))
	}
	return rl
}

// selectRouteStats picks the request's virtual cluster and route stats
// once its cluster is known, as Envoy's router does: the virtual cluster
// is matched on the request as the filters left it, before rewrites.
func (s *stream) selectRouteStats() {
	r := s.route
	rl := &s.routes().stats
	if vc := r.VirtualHost.VirtualCluster(&s.rreq); vc != nil {
		s.vcStats = rl.vclusters[vc.Index]
	}
	if r.StatIndex >= 0 {
		s.rtStats = rl.routes[r.StatIndex]
	}
	if s.entry.HealthCheck {
		// Envoy charges no code or timing stats for health checks.
		s.vcStats, s.rtStats = nil, nil
	}
}

// levelStats are the request's virtual cluster and route stats, either
// nil.
func (s *stream) levelStats() [2]*routeStats { return [2]*routeStats{s.vcStats, s.rtStats} }

// chargeCode counts the status of an upstream response, or of the
// proxy's answer to an upstream failure, as Envoy's chargeUpstreamCode:
// in the cluster's stats and the request's virtual cluster's and route's.
func (s *stream) chargeCode(cs *upstream.ClusterStats, code int) {
	if s.m.filters.noDynamicStats {
		// dynamic_stats: false, Envoy's switch for the per-code and
		// timing stats.
		return
	}
	if !s.m.filters.suppressGrpcCodeStats || !s.grpcRequest() {
		// suppress_grpc_request_failure_code_stats leaves a gRPC
		// request out of the cluster's code stats only, as Envoy's
		// chargeBasicResponseStat does.
		cs.RecordResponse(code)
	}
	for _, rs := range s.levelStats() {
		if rs != nil {
			rs.rqCompleted.Inc()
			rs.codes.Record(code)
		}
	}
}

// chargeTime records the upstream's time to a complete response.
func (s *stream) chargeTime(cs *upstream.ClusterStats, d time.Duration) {
	if s.m.filters.noDynamicStats {
		return
	}
	ms := uint64(d.Milliseconds())
	cs.UpstreamRqTime.Record(ms)
	s.chargeTimeoutBudget(cs, d)
	for _, rs := range s.levelStats() {
		if rs != nil {
			rs.rqTime.Record(ms)
		}
	}
}

// chargeTimeout counts a route timeout.
func (s *stream) chargeTimeout(cs *upstream.ClusterStats) {
	cs.UpstreamRqTimeout().Inc()
	// The route timeout fired: the request used all of it.
	s.chargeTimeoutBudget(cs, s.rqTimeout)
	for _, rs := range s.levelStats() {
		if rs != nil {
			rs.rqTimeout.Inc()
		}
	}
}

// chargeRequest counts a request sent to a host.
func (s *stream) chargeRequest(cs *upstream.ClusterStats) {
	cs.UpstreamRqTotal.Inc()
	for _, rs := range s.levelStats() {
		if rs != nil {
			rs.rqTotal.Inc()
		}
	}
}
