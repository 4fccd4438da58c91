package cluster

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// extraStats are the cluster stats of Envoy's that the shared ClusterStats do
// not carry: the load balancer's and the pools' own.
type extraStats struct {
	// counters are the extraCounter ones, nil until first used.
	counters [numExtraCounters]stats.LazyCounter
	// maxHostWeight is the largest host weight of the cluster.
	maxHostWeight *stats.Gauge
	// update are the config update counters every cluster has in Envoy;
	// DNS resolutions move them (update_empty and the assignment_* ones
	// are EDS's).
	update dnscluster.Stats
}

// extraCounter is one of the pools' and the load balancer's counters that
// most clusters rarely or never increment. They are declared (see
// stats.Scope.DeclareCounter): listed at zero, each costs the store 8
// bytes rather than a counter's 32 until its first increment.
type extraCounter uint8

const (
	// extraLBHealthyPanic counts picks made in panic mode.
	extraLBHealthyPanic extraCounter = iota
	// extraNoneHealthy counts requests that found no host to go to.
	extraNoneHealthy
	// extraIdleTimeout counts connections closed after idle_timeout.
	extraIdleTimeout
	// extraMaxRequests counts connections closed after
	// max_requests_per_connection.
	extraMaxRequests
	// extraCxOverflow counts connections the max_connections breaker
	// did not let open; extraRqPendingOverflow requests the
	// max_pending_requests or max_requests breaker refused.
	extraCxOverflow
	extraRqPendingOverflow
	// extraRqCancelled counts pending requests whose client went away or
	// whose route timeout passed; extraRqPendingFailureEject those whose
	// connection failed to open.
	extraRqCancelled
	extraRqPendingFailureEject
	// extraBindErrors counts connections that could not bind their
	// source address (original_src without CAP_NET_ADMIN, an address the
	// kernel refuses).
	extraBindErrors
	numExtraCounters
)

// name returns the counter's name in the cluster's scope.
func (e extraCounter) name() string {
	switch e {
	case extraLBHealthyPanic:
		return "lb_healthy_panic"
	case extraNoneHealthy:
		return "upstream_cx_none_healthy"
	case extraIdleTimeout:
		return "upstream_cx_idle_timeout"
	case extraMaxRequests:
		return "upstream_cx_max_requests"
	case extraCxOverflow:
		return "upstream_cx_overflow"
	case extraRqPendingOverflow:
		return "upstream_rq_pending_overflow"
	case extraRqCancelled:
		return "upstream_rq_cancelled"
	case extraRqPendingFailureEject:
		return "upstream_rq_pending_failure_eject"
	case extraBindErrors:
		return "bind_errors"
	}
	return ""
}

// extraCounter returns the cluster's counter e, allocating it on its first
// use; after that it is one atomic load.
func (c *Cluster) extraCounter(e extraCounter) *stats.Counter {
	if ctr := c.extra.counters[e].Load(); ctr != nil {
		return ctr
	}
	return c.extra.counters[e].Get(c.scope, e.name())
}

// The positions of the stats in extraTemplate.
const (
	tMaxHostWeight = iota
	tUpdateAttempt
	tUpdateSuccess
	tUpdateFailure
	tUpdateNoRebuild
	// The extraCounter ones follow, declared, then the declared stats of
	// extraDeclared, the two gauges (tVersion is the first), and in
	// extraEDSTemplate the EDS subscription's stats (tEDSRejected on).
)

// extraTemplate is the stats extraStats.init makes under every cluster's
// scope, as one block (see stats.Template); extraEDSTemplate is the same
// with an EDS cluster's subscription stats (see newEDSStats) after them.
// An EDS cluster makes its stats in that one block: made one by one
// after the cluster's blocks, its few subscription stats each went
// through the store's young map and were merged into the scope's long
// list once more (about a tenth of a CDS update of 10,000 EDS
// clusters). They are never modified.
var (
	extraTemplate    = newExtraTemplate(false)
	extraEDSTemplate = newExtraTemplate(true)
)

// The positions of the gauge version, then of the EDS subscription's
// stats in extraEDSTemplate: update_rejected, init_fetch_timeout and
// update_time.
var (
	tVersion                         = tUpdateNoRebuild + 1 + int(numExtraCounters) + len(extraDeclared)
	tEDSRejected                     = tVersion + 2
	tEDSInitFetchTimeout, tEDSUpdate = tEDSRejected + 1, tEDSRejected + 2
)

// extraDeclared are the counters Envoy creates in every cluster's traffic
// stats that stay at zero here: EDS's own (which its subscription counts
// by name when the cluster has one), those of features refused or absent
// (HTTP/3 and 0-RTT, max_connection_pools, the cluster's
// max_connection_duration, maintenance mode, upstream read pauses, which
// Go's blocking reads do not have), or those another part counts by the
// same name (the TCP proxy's attempts, the ORIGINAL_DST cluster's invalid
// headers). Declared, they cost 8 bytes each until something asks for
// them.
var extraDeclared = []string{
	"update_empty",
	"assignment_stale",
	"assignment_timeout_received",
	"assignment_use_cached",
	"original_dst_host_invalid",
	"upstream_cx_connect_attempts_exceeded",
	"upstream_cx_connect_with_0_rtt",
	"upstream_cx_http3_total",
	"upstream_cx_max_duration_reached",
	"upstream_cx_pool_overflow",
	"upstream_flow_control_backed_up_total",
	"upstream_flow_control_drained_total",
	"upstream_flow_control_paused_reading_total",
	"upstream_flow_control_resumed_reading_total",
	"upstream_rq_0rtt",
	"upstream_rq_maintenance_mode",
	"upstream_http3_broken",
}

func newExtraTemplate(eds bool) *stats.Template {
	ts := []stats.TemplateStat{
		tMaxHostWeight:   stats.GaugeStat("max_host_weight"),
		tUpdateAttempt:   stats.CounterStat("update_attempt"),
		tUpdateSuccess:   stats.CounterStat("update_success"),
		tUpdateFailure:   stats.CounterStat("update_failure"),
		tUpdateNoRebuild: stats.CounterStat("update_no_rebuild"),
	}
	for i := range numExtraCounters {
		ts = append(ts, stats.DeclaredCounterStat(i.name()))
	}
	for _, name := range extraDeclared {
		ts = append(ts, stats.DeclaredCounterStat(name))
	}
	ts = append(ts, stats.GaugeStat("version"), stats.GaugeStat("warming_state"))
	if eds {
		ts = append(ts, stats.CounterStat("update_rejected"), stats.CounterStat("init_fetch_timeout"), stats.GaugeStat("update_time"))
	}
	return stats.NewTemplate(ts...)
}

// init creates, or declares, the stats under the cluster's scope, with
// an EDS cluster's subscription stats when eds is set, and returns their
// block.
func (e *extraStats) init(scope stats.Scope, eds bool) stats.Block {
	tmpl := extraTemplate
	if eds {
		tmpl = extraEDSTemplate
	}
	return e.initFrom(scope.NewBlock(tmpl))
}

// initFrom is init given the block of extraTemplate, or of
// extraEDSTemplate, made under the cluster's scope; it returns b.
func (e *extraStats) initFrom(b stats.Block) stats.Block {
	e.maxHostWeight = b.Gauge(tMaxHostWeight)
	e.update = dnscluster.Stats{
		UpdateAttempt:   b.Counter(tUpdateAttempt),
		UpdateSuccess:   b.Counter(tUpdateSuccess),
		UpdateFailure:   b.Counter(tUpdateFailure),
		UpdateNoRebuild: b.Counter(tUpdateNoRebuild),
	}
	return b
}

// clusterSets are the templates every cluster makes under its scope
// "cluster.<name>.", joined so that they are made as one block (see
// stats.TemplateSet): the traffic stats (part setTraffic), the load
// balancer's (setLB) and extraTemplate (setExtra); the second set has
// extraEDSTemplate instead, for an EDS cluster. Made one template after
// another, each merge copied and compared the scope's list the ones
// before had made: about a quarter of a CDS update of 10,000 EDS
// clusters. They are never modified.
var clusterSets = [2]*stats.TemplateSet{
	stats.NewTemplateSet(upstream.ClusterTemplate(), lb.StatsTemplate(), extraTemplate),
	stats.NewTemplateSet(upstream.ClusterTemplate(), lb.StatsTemplate(), extraEDSTemplate),
}

// The parts of a cluster set.
const (
	setTraffic = iota
	setLB
	setExtra
)

// clusterSet returns the set of templates of a cluster, EDS or not.
func clusterSet(eds bool) *stats.TemplateSet {
	if eds {
		return clusterSets[1]
	}
	return clusterSets[0]
}
