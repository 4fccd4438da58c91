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

// NewClusterStats creates the stats of the cluster whose scope is
// "cluster.<name>.".
func NewClusterStats(scope stats.Scope) *ClusterStats {
	cs := &ClusterStats{
		UpstreamCxTotal:         scope.Counter("upstream_cx_total"),
		UpstreamCxActive:        scope.Gauge("upstream_cx_active"),
		UpstreamCxDestroy:       scope.Counter("upstream_cx_destroy"),
		UpstreamCxConnectMs:     scope.Histogram("upstream_cx_connect_ms", stats.UnitMilliseconds),
		UpstreamCxLengthMs:      scope.Histogram("upstream_cx_length_ms", stats.UnitMilliseconds),
		UpstreamCxRxBytesTotal:  scope.Counter("upstream_cx_rx_bytes_total"),
		UpstreamCxTxBytesTotal:  scope.Counter("upstream_cx_tx_bytes_total"),
		UpstreamRqTotal:         scope.Counter("upstream_rq_total"),
		UpstreamRqActive:        scope.Gauge("upstream_rq_active"),
		UpstreamRqCompleted:     scope.Counter("upstream_rq_completed"),
		UpstreamRqTime:          scope.Histogram("upstream_rq_time", stats.UnitMilliseconds),
		UpstreamRqPendingTotal:  scope.Counter("upstream_rq_pending_total"),
		UpstreamRqPendingActive: scope.Gauge("upstream_rq_pending_active"),
		MembershipHealthy:       scope.Gauge("membership_healthy"),
		MembershipDegraded:      scope.Gauge("membership_degraded"),
		MembershipExcluded:      scope.Gauge("membership_excluded"),
		MembershipTotal:         scope.Gauge("membership_total"),
		MembershipChange:        scope.Counter("membership_change"),
	}
	cs.UpstreamCxDestroyLocal = scope.Counter("upstream_cx_destroy_local")
	cs.UpstreamCxDestroyRemote = scope.Counter("upstream_cx_destroy_remote")
	cs.UpstreamCxRxBytesBuffered = scope.Gauge("upstream_cx_rx_bytes_buffered")
	cs.UpstreamRqPerCx = scope.Histogram("upstream_rq_per_cx", stats.UnitUnspecified)
	cs.UpstreamCxTxBytesBuffered = scope.Gauge("upstream_cx_tx_bytes_buffered")
	declareRare(scope)
	cs.codes.Init(scope)
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
