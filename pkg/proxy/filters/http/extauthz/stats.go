package extauthz

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// filterStats are the filter's counters, http.<stat_prefix>.ext_authz.*.
type filterStats struct {
	ok, denied, error, disabled, failureModeAllowed *stats.Counter
	// invalid counts answers rejected for their edits (validate_mutations,
	// decoder_header_mutation_rules).
	invalid *stats.Counter
	// omittedResponseHeaders counts responses some of whose service
	// headers were left out (enforce_response_header_limits).
	omittedResponseHeaders *stats.Counter
	// ignoredDynamicMetadata counts answers whose dynamic metadata was
	// dropped (enable_dynamic_metadata_ingestion false).
	ignoredDynamicMetadata *stats.Counter
}

// clusterStats are the counters Envoy keeps per route cluster.
type clusterStats struct {
	ok, denied, error, failureModeAllowed, invalid *stats.Counter
	// completed and codes are the cluster's own upstream_rq_completed and
	// upstream_rq_<code> stats, charged with denials
	// (charge_cluster_response_stats); internal are its
	// internal.upstream_rq_<code> ones, as Envoy charges a denial as an
	// internal request.
	completed       *stats.Counter
	codes, internal upstream.CodeCounters
}

// newFilterStats makes the counters under prefix.
func newFilterStats(store *stats.Store, prefix string) filterStats {
	return filterStats{
		ok:                 store.Counter(prefix + "ok"),
		denied:             store.Counter(prefix + "denied"),
		error:              store.Counter(prefix + "error"),
		disabled:           store.Counter(prefix + "disabled"),
		failureModeAllowed: store.Counter(prefix + "failure_mode_allowed"),
		invalid:            store.Counter(prefix + "invalid"),

		omittedResponseHeaders: store.Counter(prefix + "omitted_response_headers"),

		ignoredDynamicMetadata: store.Counter(prefix + "ignored_dynamic_metadata"),
	}
}

// clusterStats returns the counters of the route's cluster.
func (c *config) clusterStats(name string) *clusterStats {
	if v, ok := c.clusters.Load(name); ok {
		return v.(*clusterStats)
	}
	p := "cluster." + name + "." + c.prefix
	cs := &clusterStats{
		ok:                 c.store.Counter(p + "ok"),
		denied:             c.store.Counter(p + "denied"),
		error:              c.store.Counter(p + "error"),
		failureModeAllowed: c.store.Counter(p + "failure_mode_allowed"),
		invalid:            c.store.Counter(p + "invalid"),
	}
	if c.chargeCluster {
		scope := c.store.Scope("cluster." + name + ".")
		cs.completed = scope.Counter("upstream_rq_completed")
		cs.codes.Init(scope)
		cs.internal.Init(c.store.Scope("cluster." + name + ".internal."))
	}
	v, _ := c.clusters.LoadOrStore(name, cs)
	return v.(*clusterStats)
}

// chargeDenial counts a denial's status in the cluster's response stats,
// as Envoy's filter does with charge_cluster_response_stats: completed,
// the code and its class, and the same under internal.
func (cs *clusterStats) chargeDenial(code int) {
	cs.completed.Inc()
	cs.codes.Record(code)
	cs.internal.Record(code)
}
