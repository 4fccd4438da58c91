package upstream

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// TimeoutBudgetStats are the histograms of Cluster.track_cluster_stats.
// timeout_budgets (and the deprecated track_timeout_budgets), Envoy's
// ClusterTimeoutBudgetStats: the share of its timeout, in percent, each
// request used (upstream_rq_timeout_budget_percent_used: from the end of
// the request to the end of the response, against the route timeout) and
// each attempt used (upstream_rq_timeout_budget_per_try_percent_used:
// from the attempt's start to its end, against the per-try timeout). A
// timeout of 0 is infinite, and any share of it is 0, as in Envoy.
type TimeoutBudgetStats struct {
	PercentUsed       *stats.Histogram
	PerTryPercentUsed *stats.Histogram
}

// RequestResponseSizeStats are the histograms of
// Cluster.track_cluster_stats.request_response_sizes, Envoy's
// ClusterRequestResponseSizeStats, recorded at the end of each attempt:
// the request's header bytes (names and values, pseudo-headers included,
// as Envoy's HeaderMap::byteSize counts them) and body bytes sent, and,
// when a response head came, its header bytes and the body bytes
// received.
type RequestResponseSizeStats struct {
	RqHeadersSize *stats.Histogram
	RqBodySize    *stats.Histogram
	RsHeadersSize *stats.Histogram
	RsBodySize    *stats.Histogram
}

// TrackedStats are the optional histograms a cluster's
// track_cluster_stats turns on; a field is nil when its option is off, so
// that the request path checks one pointer.
type TrackedStats struct {
	TimeoutBudget *TimeoutBudgetStats
	Sizes         *RequestResponseSizeStats
}

// NewTrackedStats creates the histograms asked for under the cluster's
// scope ("cluster.<name>."); nil when neither is.
func NewTrackedStats(scope stats.Scope, timeoutBudgets, sizes bool) *TrackedStats {
	if !timeoutBudgets && !sizes {
		return nil
	}
	t := &TrackedStats{}
	if timeoutBudgets {
		t.TimeoutBudget = &TimeoutBudgetStats{
			PercentUsed:       scope.Histogram("upstream_rq_timeout_budget_percent_used", stats.UnitUnspecified),
			PerTryPercentUsed: scope.Histogram("upstream_rq_timeout_budget_per_try_percent_used", stats.UnitUnspecified),
		}
	}
	if sizes {
		t.Sizes = &RequestResponseSizeStats{
			RqHeadersSize: scope.Histogram("upstream_rq_headers_size", stats.UnitBytes),
			RqBodySize:    scope.Histogram("upstream_rq_body_size", stats.UnitBytes),
			RsHeadersSize: scope.Histogram("upstream_rs_headers_size", stats.UnitBytes),
			RsBodySize:    scope.Histogram("upstream_rs_body_size", stats.UnitBytes),
		}
	}
	return t
}

// PercentOfTimeout is the share of timeout, in percent, that elapsed
// used, Envoy's FilterUtility::percentageOfTimeout: both in whole
// milliseconds, and 0 for an infinite (0) timeout.
func PercentOfTimeout(usedMs, timeoutMs int64) uint64 {
	if timeoutMs <= 0 || usedMs <= 0 {
		return 0
	}
	return uint64(usedMs * 100 / timeoutMs)
}
