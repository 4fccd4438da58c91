package cluster

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// EDSStats are an EDS cluster's subscription stats, under
// cluster.<name>. with Envoy's names. update_attempt, update_success,
// update_failure, update_empty and version are also the stats every
// cluster has, the same ones. The cluster makes them with its other
// stats: made later by the subscription, a cluster's few new stats would
// each find its scope long settled, and be merged into its 113 stats'
// list one cluster at a time, which cost a CDS update of 10,000 EDS
// clusters about a tenth of its time.
type EDSStats struct {
	// Attempt, Success and Failure are update_attempt, update_success
	// and update_failure; Rejected is update_rejected, InitFetchTimeout
	// init_fetch_timeout.
	Attempt, Success, Failure, Rejected, InitFetchTimeout *stats.Counter
	// Version is the hash of the last accepted version_info, UpdateTime
	// when it was accepted (ms since the epoch), VersionText the version
	// itself.
	Version, UpdateTime *stats.Gauge
	VersionText         *stats.TextReadout

	scope stats.Scope
	// The counters most clusters never move, declared with the cluster's
	// stats (see extraStats.init) and nil until their first use.
	empty, timeoutReceived, stale stats.LazyCounter
}

// newEDSStats takes an EDS cluster's subscription stats from the block
// of its other stats (b, of extraEDSTemplate; update, its config update
// counters) and makes version_text beside them.
func newEDSStats(scope stats.Scope, b stats.Block, update dnscluster.Stats) *EDSStats {
	return &EDSStats{
		Attempt:          update.UpdateAttempt,
		Success:          update.UpdateSuccess,
		Failure:          update.UpdateFailure,
		Rejected:         b.Counter(tEDSRejected),
		InitFetchTimeout: b.Counter(tEDSInitFetchTimeout),
		Version:          b.Gauge(tVersion),
		UpdateTime:       b.Gauge(tEDSUpdate),
		VersionText:      scope.TextReadout("version_text"),
		scope:            scope,
	}
}

// Empty is update_empty: assignments without endpoints.
func (e *EDSStats) Empty() *stats.Counter { return e.empty.Get(e.scope, "update_empty") }

// AssignmentTimeoutReceived is assignment_timeout_received: assignments
// with an endpoint_stale_after.
func (e *EDSStats) AssignmentTimeoutReceived() *stats.Counter {
	return e.timeoutReceived.Get(e.scope, "assignment_timeout_received")
}

// AssignmentStale is assignment_stale: assignments that went stale.
func (e *EDSStats) AssignmentStale() *stats.Counter {
	return e.stale.Get(e.scope, "assignment_stale")
}

// EDSStats returns an EDS cluster's subscription stats, nil for other
// clusters.
func (c *Cluster) EDSStats() *EDSStats {
	if c.eds == nil {
		return nil
	}
	return c.eds.stats
}
