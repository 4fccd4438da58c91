package upstream

import (
	"strconv"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ClusterStats are a cluster's stats under "cluster.<name>.", with Envoy's
// names. The connection manager updates the request stats, the pools the
// connection stats and the cluster manager the membership gauges. Each is a
// pointer into the store, so updates never look a name up; the counters
// most clusters never increment are methods instead, allocated on first
// use (see cluster_stats_rare.go).
type ClusterStats struct {
	UpstreamCxTotal   *stats.Counter
	UpstreamCxActive  *stats.Gauge
	UpstreamCxDestroy *stats.Counter
	// UpstreamCxDestroyLocal and UpstreamCxDestroyRemote split
	// UpstreamCxDestroy: closed by the proxy, or after the host ended the
	// connection (end of stream or reset).
	UpstreamCxDestroyLocal  *stats.Counter
	UpstreamCxDestroyRemote *stats.Counter
	// UpstreamRqPerCx records how many requests each connection carried,
	// when it closes.
	UpstreamRqPerCx     *stats.Histogram
	UpstreamCxConnectMs *stats.Histogram
	UpstreamCxLengthMs  *stats.Histogram
	// UpstreamCxRxBytesTotal and UpstreamCxTxBytesTotal count the bytes
	// read from and written to the cluster's connections (after TLS, as
	// Envoy counts them); health checks' connections count in neither.
	UpstreamCxRxBytesTotal *stats.Counter
	UpstreamCxTxBytesTotal *stats.Counter
	// UpstreamCxRxBytesBuffered and UpstreamCxTxBytesBuffered are the
	// bytes read from the cluster's connections that wait in the proxy,
	// and the bytes for them that wait to be written.
	UpstreamCxRxBytesBuffered *stats.Gauge
	UpstreamCxTxBytesBuffered *stats.Gauge

	UpstreamRqTotal     *stats.Counter
	UpstreamRqActive    *stats.Gauge
	UpstreamRqCompleted *stats.Counter
	UpstreamRqTime      *stats.Histogram
	// UpstreamRqPendingTotal and UpstreamRqPendingActive count the
	// HTTP/1.1 requests that waited for a connection.
	UpstreamRqPendingTotal  *stats.Counter
	UpstreamRqPendingActive *stats.Gauge

	MembershipHealthy  *stats.Gauge
	MembershipDegraded *stats.Gauge
	MembershipExcluded *stats.Gauge
	MembershipTotal    *stats.Gauge
	MembershipChange   *stats.Counter

	// Tracked are the histograms of the cluster's track_cluster_stats,
	// nil without any (see cluster_stats_tracked.go).
	Tracked *TrackedStats

	// codes count responses by class and code; its scope is the
	// cluster's.
	codes CodeCounters
	// rareCounters are the counters of cluster_stats_rare.go, nil until
	// first used.
	rareCounters [numRareCounters]stats.LazyCounter
}

// CodeCounters count responses by status code under a scope:
// upstream_rq_1xx .. upstream_rq_5xx, and upstream_rq_<code>. Clusters
// keep one, and so do the router's virtual clusters and route stats.
type CodeCounters struct {
	scope stats.Scope
	// class holds upstream_rq_1xx .. upstream_rq_5xx, declared: a
	// cluster or route may never see some classes (1xx, 3xx), and each
	// costs the store 8 bytes rather than 32 until its first response.
	class [5]stats.LazyCounter
	// codes holds upstream_rq_<code> for 100..599, each created on first
	// use so that only codes seen exist, as in Envoy. The table itself is
	// allocated on the first response: most of a cluster's memory would
	// otherwise be this table, even for clusters that never see traffic.
	codes atomic.Pointer[codeTable]
}

// codeTable holds one lazily created counter per status code 100..599.
type codeTable [500]atomic.Pointer[stats.Counter]

// The positions of the stats in clusterTemplate, in the order a cluster
// made them one by one (each slab keeps its order).
const (
	tCxTotal = iota
	tCxActive
	tCxDestroy
	tCxConnectMs
	tCxLengthMs
	tCxRxBytesTotal
	tCxTxBytesTotal
	tRqTotal
	tRqActive
	tRqCompleted
	tRqTime
	tRqPendingTotal
	tRqPendingActive
	tMembershipHealthy
	tMembershipDegraded
	tMembershipExcluded
	tMembershipTotal
	tMembershipChange
	tCxDestroyLocal
	tCxDestroyRemote
	tCxRxBytesBuffered
	tRqPerCx
	tCxTxBytesBuffered
	// The rare counters and the class counters follow, declared.
)

// clusterTemplate is the stats NewClusterStats makes under every
// cluster's scope, made as one block (see stats.Template): a CDS update
// of 10,000 clusters makes them all at once. It is never modified.
var clusterTemplate = newClusterTemplate()

func newClusterTemplate() *stats.Template {
	ts := []stats.TemplateStat{
		tCxTotal:            stats.CounterStat("upstream_cx_total"),
		tCxActive:           stats.GaugeStat("upstream_cx_active"),
		tCxDestroy:          stats.CounterStat("upstream_cx_destroy"),
		tCxConnectMs:        stats.HistogramStat("upstream_cx_connect_ms", stats.UnitMilliseconds),
		tCxLengthMs:         stats.HistogramStat("upstream_cx_length_ms", stats.UnitMilliseconds),
		tCxRxBytesTotal:     stats.CounterStat("upstream_cx_rx_bytes_total"),
		tCxTxBytesTotal:     stats.CounterStat("upstream_cx_tx_bytes_total"),
		tRqTotal:            stats.CounterStat("upstream_rq_total"),
		tRqActive:           stats.GaugeStat("upstream_rq_active"),
		tRqCompleted:        stats.CounterStat("upstream_rq_completed"),
		tRqTime:             stats.HistogramStat("upstream_rq_time", stats.UnitMilliseconds),
		tRqPendingTotal:     stats.CounterStat("upstream_rq_pending_total"),
		tRqPendingActive:    stats.GaugeStat("upstream_rq_pending_active"),
		tMembershipHealthy:  stats.GaugeStat("membership_healthy"),
		tMembershipDegraded: stats.GaugeStat("membership_degraded"),
		tMembershipExcluded: stats.GaugeStat("membership_excluded"),
		tMembershipTotal:    stats.GaugeStat("membership_total"),
		tMembershipChange:   stats.CounterStat("membership_change"),
		tCxDestroyLocal:     stats.CounterStat("upstream_cx_destroy_local"),
		tCxDestroyRemote:    stats.CounterStat("upstream_cx_destroy_remote"),
		tCxRxBytesBuffered:  stats.GaugeStat("upstream_cx_rx_bytes_buffered"),
		tRqPerCx:            stats.HistogramStat("upstream_rq_per_cx", stats.UnitUnspecified),
		tCxTxBytesBuffered:  stats.GaugeStat("upstream_cx_tx_bytes_buffered"),
	}
	for r := range numRareCounters {
		ts = append(ts, stats.DeclaredCounterStat(r.name()))
	}
	for i := range 5 {
		ts = append(ts, stats.DeclaredCounterStat(className(i)))
	}
	return stats.NewTemplate(ts...)
}

// ClusterTemplate returns the template of the stats NewClusterStats
// makes, for a caller that makes it in a stats.TemplateSet with others
// under the same scope (see ClusterStatsOf).
func ClusterTemplate() *stats.Template { return clusterTemplate }

// NewClusterStats creates the stats of the cluster whose scope is
// "cluster.<name>.".
func NewClusterStats(scope stats.Scope) *ClusterStats {
	return ClusterStatsOf(scope, scope.NewBlock(clusterTemplate))
}

// ClusterStatsOf returns the stats of the cluster whose scope is
// "cluster.<name>.", given b, the block of ClusterTemplate made under it.
func ClusterStatsOf(scope stats.Scope, b stats.Block) *ClusterStats {
	cs := &ClusterStats{
		UpstreamCxTotal:           b.Counter(tCxTotal),
		UpstreamCxActive:          b.Gauge(tCxActive),
		UpstreamCxDestroy:         b.Counter(tCxDestroy),
		UpstreamCxDestroyLocal:    b.Counter(tCxDestroyLocal),
		UpstreamCxDestroyRemote:   b.Counter(tCxDestroyRemote),
		UpstreamRqPerCx:           b.Histogram(tRqPerCx),
		UpstreamCxConnectMs:       b.Histogram(tCxConnectMs),
		UpstreamCxLengthMs:        b.Histogram(tCxLengthMs),
		UpstreamCxRxBytesTotal:    b.Counter(tCxRxBytesTotal),
		UpstreamCxTxBytesTotal:    b.Counter(tCxTxBytesTotal),
		UpstreamCxRxBytesBuffered: b.Gauge(tCxRxBytesBuffered),
		UpstreamCxTxBytesBuffered: b.Gauge(tCxTxBytesBuffered),
		UpstreamRqTotal:           b.Counter(tRqTotal),
		UpstreamRqActive:          b.Gauge(tRqActive),
		UpstreamRqCompleted:       b.Counter(tRqCompleted),
		UpstreamRqTime:            b.Histogram(tRqTime),
		UpstreamRqPendingTotal:    b.Counter(tRqPendingTotal),
		UpstreamRqPendingActive:   b.Gauge(tRqPendingActive),
		MembershipHealthy:         b.Gauge(tMembershipHealthy),
		MembershipDegraded:        b.Gauge(tMembershipDegraded),
		MembershipExcluded:        b.Gauge(tMembershipExcluded),
		MembershipTotal:           b.Gauge(tMembershipTotal),
		MembershipChange:          b.Counter(tMembershipChange),
	}
	// The class counters were declared with the block.
	cs.codes.scope = scope
	return cs
}

// RecordResponse counts one upstream response by its status code (see
// CodeCounters.Record).
func (cs *ClusterStats) RecordResponse(code int) { cs.codes.Record(code) }

// Init creates the class counters under scope.
func (cc *CodeCounters) Init(scope stats.Scope) {
	cc.scope = scope
	for i := range cc.class {
		scope.DeclareCounter(className(i))
	}
}

// Record counts one response by its status code, in the code class and
// the per-code counter. Codes outside 100..599 count in neither, as they
// cannot come from a valid response.
func (cc *CodeCounters) Record(code int) {
	if code < 100 || code > 599 {
		return
	}
	cc.classCounter(code/100 - 1).Inc()
	t := cc.codes.Load()
	if t == nil {
		t = new(codeTable)
		if !cc.codes.CompareAndSwap(nil, t) {
			t = cc.codes.Load()
		}
	}
	p := &t[code-100]
	c := p.Load()
	if c == nil {
		// Racing first uses get the same counter: the store returns the
		// existing stat for a name.
		c = cc.scope.Counter("upstream_rq_" + strconv.Itoa(code))
		p.Store(c)
	}
	c.Inc()
}

// className returns the name of class counter i, upstream_rq_<i+1>xx.
func className(i int) string { return "upstream_rq_" + strconv.Itoa(i+1) + "xx" }

// classCounter returns class counter i, allocating it on first use.
func (cc *CodeCounters) classCounter(i int) *stats.Counter {
	if c := cc.class[i].Load(); c != nil {
		return c
	}
	return cc.class[i].Get(cc.scope, className(i))
}
