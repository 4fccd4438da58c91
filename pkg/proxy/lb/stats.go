package lb

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// Stats are the load balancer's stats, under Envoy's names
// (cluster.<name>.lb_*). Envoy creates them in every cluster, and most
// clusters never move their counters (zone routing needs a local cluster,
// the subset ones a subset balancer): the counters are declared (see
// stats.Scope.DeclareCounter), listed at zero as Envoy lists them, and
// cost the store 8 bytes each rather than a counter's 32 until their
// first increment. A nil *Stats counts nothing.
type Stats struct {
	scope    stats.Scope
	counters [numCounters]stats.LazyCounter

	// SubsetsActive is lb_subsets_active; nil sets nothing.
	SubsetsActive *stats.Gauge
	// SubsetsSingleHostDuplicate is
	// lb_subsets_single_host_per_subset_duplicate; nil sets nothing.
	SubsetsSingleHostDuplicate *stats.Gauge
}

// Counter names one of the load balancer's counters.
type Counter uint8

// The load balancer's counters.
const (
	RecalculateZoneStructures Counter = iota // lb_recalculate_zone_structures
	ZoneClusterTooSmall                      // lb_zone_cluster_too_small
	LocalClusterNotOK                        // lb_local_cluster_not_ok
	ZoneRoutingAllDirectly                   // lb_zone_routing_all_directly
	ZoneRoutingSampled                       // lb_zone_routing_sampled
	ZoneRoutingCrossZone                     // lb_zone_routing_cross_zone
	ZoneNoCapacityLeft                       // lb_zone_no_capacity_left
	SubsetsCreated                           // lb_subsets_created
	SubsetsRemoved                           // lb_subsets_removed
	SubsetsSelected                          // lb_subsets_selected
	SubsetsFallback                          // lb_subsets_fallback
	SubsetsFallbackPanic                     // lb_subsets_fallback_panic
	numCounters
)

// counterNames are the counters' names in the cluster's scope.
var counterNames = [numCounters]string{
	RecalculateZoneStructures: "lb_recalculate_zone_structures",
	ZoneClusterTooSmall:       "lb_zone_cluster_too_small",
	LocalClusterNotOK:         "lb_local_cluster_not_ok",
	ZoneRoutingAllDirectly:    "lb_zone_routing_all_directly",
	ZoneRoutingSampled:        "lb_zone_routing_sampled",
	ZoneRoutingCrossZone:      "lb_zone_routing_cross_zone",
	ZoneNoCapacityLeft:        "lb_zone_no_capacity_left",
	SubsetsCreated:            "lb_subsets_created",
	SubsetsRemoved:            "lb_subsets_removed",
	SubsetsSelected:           "lb_subsets_selected",
	SubsetsFallback:           "lb_subsets_fallback",
	SubsetsFallbackPanic:      "lb_subsets_fallback_panic",
}

// Name returns the counter's name in the cluster's scope.
func (c Counter) Name() string { return counterNames[c] }

// statsTemplate is the stats NewStats makes in every cluster, as one
// block (see stats.Template): lb_subsets_active at position 0, then the
// counters, declared. It is never modified.
var statsTemplate = newStatsTemplate()

func newStatsTemplate() *stats.Template {
	ts := []stats.TemplateStat{stats.GaugeStat("lb_subsets_active")}
	for c := range numCounters {
		ts = append(ts, stats.DeclaredCounterStat(c.Name()))
	}
	// Envoy's older zone check, which nothing counts any more; the stat
	// remains.
	ts = append(ts, stats.DeclaredCounterStat("lb_zone_number_differs"))
	return stats.NewTemplate(ts...)
}

// NewStats declares the load balancer's counters in a cluster's scope and
// creates its gauges: lb_subsets_active in every cluster, as Envoy has it,
// and lb_subsets_single_host_per_subset_duplicate in a cluster with
// subsets (Envoy creates it with the subset balancer).
func NewStats(scope stats.Scope, subsets bool) *Stats {
	return StatsOf(scope, scope.NewBlock(statsTemplate), subsets)
}

// StatsTemplate returns the template of the stats NewStats makes in
// every cluster, for a caller that makes it in a stats.TemplateSet with
// others under the cluster's scope (see StatsOf).
func StatsTemplate() *stats.Template { return statsTemplate }

// StatsOf is NewStats given b, the block of StatsTemplate made under
// scope.
func StatsOf(scope stats.Scope, b stats.Block, subsets bool) *Stats {
	st := &Stats{scope: scope, SubsetsActive: b.Gauge(0)}
	if subsets {
		st.SubsetsSingleHostDuplicate = scope.Gauge("lb_subsets_single_host_per_subset_duplicate")
	}
	return st
}

// Counter returns the counter c, allocating it on its first use; after
// that it is one atomic load.
func (st *Stats) Counter(c Counter) *stats.Counter {
	if ctr := st.counters[c].Load(); ctr != nil {
		return ctr
	}
	return st.counters[c].Get(st.scope, c.Name())
}

// inc adds one to counter c; a nil st counts nothing.
func (st *Stats) inc(c Counter) {
	if st != nil {
		st.Counter(c).Inc()
	}
}

// add adds n to counter c: nothing for n 0, so that a counter nothing
// moved stays declared; a nil st counts nothing.
func (st *Stats) add(c Counter, n int) {
	if st != nil && n > 0 {
		st.Counter(c).Add(uint64(n))
	}
}
