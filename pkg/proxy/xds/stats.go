package xds

import (
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// subscriptionStats are Envoy's SubscriptionStats, with Envoy's names, so
// dashboards built for Envoy's listener_manager.lds.* stats work unchanged.
type subscriptionStats struct {
	// initFetchTimeout stays at zero: the file is read synchronously at
	// start, so the initial fetch cannot time out. It exists for
	// dashboards that expect it.
	initFetchTimeout *stats.Counter
	updateAttempt    *stats.Counter
	updateSuccess    *stats.Counter
	updateFailure    *stats.Counter
	updateRejected   *stats.Counter
	// updateTime is the time of the last accepted update, in milliseconds
	// since the epoch.
	updateTime *stats.Gauge
	// version is the xxHash64 of the last accepted version_info.
	version        *stats.Gauge
	versionText    *stats.TextReadout
	updateDuration *stats.Histogram
}

// newSubscriptionStats creates the stats in sc, so that they are listed
// (at zero) from the start.
func newSubscriptionStats(sc stats.Scope) subscriptionStats {
	return subscriptionStats{
		initFetchTimeout: sc.Counter("init_fetch_timeout"),
		updateAttempt:    sc.Counter("update_attempt"),
		updateSuccess:    sc.Counter("update_success"),
		updateFailure:    sc.Counter("update_failure"),
		updateRejected:   sc.Counter("update_rejected"),
		updateTime:       sc.Gauge("update_time"),
		version:          sc.Gauge("version"),
		versionText:      sc.TextReadout("version_text"),
		updateDuration:   sc.Histogram("update_duration", stats.UnitMilliseconds),
	}
}

// success counts an accepted update of version, applied between start and
// now, and sets the version stats.
func (st subscriptionStats) success(version string, start, now time.Time) {
	st.updateSuccess.Inc()
	st.updateTime.Set(now.UnixMilli())
	// Envoy's version gauge is the xxHash64 (seed 0) of version_info; the
	// gauge is signed here, so hashes past 2^63 read as negative.
	st.version.Set(int64(xxhash.Sum64String(version)))
	st.versionText.Set(version)
	st.updateDuration.Record(uint64(max(now.Sub(start).Milliseconds(), 0)))
}

// ResourceStats are the subscription stats of one resource among the
// several a subscription names, for the resources that keep Envoy's stats
// of their own although they share the ADS stream's subscription of
// their type (SDS's sds.<secret name>.*).
type ResourceStats struct {
	st    subscriptionStats
	empty *stats.Counter
}

// NewResourceStats creates the stats in sc, listed at zero from the
// start, and counts the subscription's start (an update_attempt), as
// Envoy does.
func NewResourceStats(sc stats.Scope) *ResourceStats {
	r := &ResourceStats{st: newSubscriptionStats(sc), empty: sc.Counter("update_empty")}
	r.st.updateAttempt.Inc()
	return r
}

// Attempt counts a response that carried the resource (or was meant to).
func (r *ResourceStats) Attempt() { r.st.updateAttempt.Inc() }

// Empty counts a response that carried no resource at all.
func (r *ResourceStats) Empty() { r.empty.Inc() }

// Rejected counts a rejected update.
func (r *ResourceStats) Rejected() { r.st.updateRejected.Inc() }

// Failure counts a lost stream, with its attempt.
func (r *ResourceStats) Failure() {
	r.st.updateFailure.Inc()
	r.st.updateAttempt.Inc()
}

// InitFetchTimeout counts the initial fetch's timeout, with its attempt.
func (r *ResourceStats) InitFetchTimeout() {
	r.st.initFetchTimeout.Inc()
	r.st.updateAttempt.Inc()
}

// Success counts an accepted update of version, applied between start
// and now.
func (r *ResourceStats) Success(version string, start, now time.Time) {
	r.st.success(version, start, now)
}
