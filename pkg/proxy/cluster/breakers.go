package cluster

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Thresholds are the circuit-breaker limits of one routing priority,
// shown by /clusters and enforced by the cluster's breakers
// (resources.go): connections open to the cluster's hosts, requests
// waiting for a connection, requests in flight and retries in flight.
type Thresholds struct {
	MaxConnections     uint32
	MaxPendingRequests uint32
	MaxRequests        uint32
	MaxRetries         uint32
	// RetryBudget, when set, replaces MaxRetries (retry_budget).
	RetryBudget *RetryBudget
	// TrackRemaining publishes the circuit_breakers.<priority>.remaining_*
	// gauges.
	TrackRemaining bool
}

// Envoy's limits for a priority, or a limit, the configuration does not
// mention.
const (
	DefaultMaxConnections     = 1024
	DefaultMaxPendingRequests = 1024
	DefaultMaxRequests        = 1024
	DefaultMaxRetries         = 3
)

// DefaultThresholds returns the thresholds of an unconfigured priority.
func DefaultThresholds() Thresholds {
	return Thresholds{
		MaxConnections:     DefaultMaxConnections,
		MaxPendingRequests: DefaultMaxPendingRequests,
		MaxRequests:        DefaultMaxRequests,
		MaxRetries:         DefaultMaxRetries,
	}
}

// RetryBudget is circuit_breakers.thresholds[].retry_budget: the retries
// in flight may be BudgetPercent of the requests active or pending, and
// never fewer than MinRetryConcurrency, as in Envoy.
type RetryBudget struct {
	BudgetPercent       float64
	MinRetryConcurrency uint32
	// Interval is budget_interval: when set, the budget is a share of
	// the requests (retries included) that started within the last
	// Interval, completed or not, rather than of those active and
	// pending (budgetWindow).
	Interval time.Duration
}

// Envoy's retry budget when retry_budget is set without these fields.
const (
	DefaultBudgetPercent       = 20.0
	DefaultMinRetryConcurrency = 3
)

// max is the number of retries the budget allows with active requests
// active or pending.
func (b *RetryBudget) max(active int64) int64 {
	return max(int64(b.BudgetPercent/100*float64(max(active, 0))), int64(b.MinRetryConcurrency))
}

// buildRetryBudget reads a thresholds entry's retry_budget (nil: unset).
func buildRetryBudget(rb *clusterv3.CircuitBreakers_Thresholds_RetryBudget, path string) (*RetryBudget, error) {
	if rb == nil {
		return nil, nil
	}
	b := &RetryBudget{BudgetPercent: DefaultBudgetPercent, MinRetryConcurrency: DefaultMinRetryConcurrency}
	if v := rb.GetBudgetPercent(); v != nil {
		p := v.GetValue()
		if !(p >= 0 && p <= 100) {
			return nil, configErrorf(join(path, "budget_percent"), "%v is not a percentage between 0 and 100", p)
		}
		b.BudgetPercent = p
	}
	if v := rb.GetMinRetryConcurrency(); v != nil {
		b.MinRetryConcurrency = v.GetValue()
	}
	if d := rb.GetBudgetInterval(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, configErrorf(join(path, "budget_interval"), "must be a duration of 0 or more")
		}
		b.Interval = d.AsDuration()
	}
	return b, nil
}

// numPriorities is the number of routing priorities (DEFAULT and HIGH).
const numPriorities = 2

// buildThresholds reads circuit_breakers.thresholds: one entry per
// priority at most, unset limits taking their defaults. Errors are
// relative to circuit_breakers.
func buildThresholds(cb *clusterv3.CircuitBreakers) ([numPriorities]Thresholds, []error) {
	out := [numPriorities]Thresholds{DefaultThresholds(), DefaultThresholds()}
	var errs []error
	seen := [numPriorities]int{-1, -1}
	for i, t := range cb.GetThresholds() {
		path := index("thresholds", i)
		p, err := entryPriority(t, "thresholds", i, &seen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		budget, err := buildRetryBudget(t.GetRetryBudget(), join(path, "retry_budget"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[p] = Thresholds{
			RetryBudget:        budget,
			MaxConnections:     orDefault(t.GetMaxConnections(), DefaultMaxConnections),
			MaxPendingRequests: orDefault(t.GetMaxPendingRequests(), DefaultMaxPendingRequests),
			MaxRequests:        orDefault(t.GetMaxRequests(), DefaultMaxRequests),
			MaxRetries:         orDefault(t.GetMaxRetries(), DefaultMaxRetries),
			TrackRemaining:     t.GetTrackRemaining(),
		}
	}
	return out, errs
}

// entryPriority checks the priority of entry i of list (thresholds or
// per_host_thresholds): DEFAULT or HIGH, and not one an earlier entry
// set (seen holds each priority's entry, -1 for none). Errors are
// relative to circuit_breakers.
func entryPriority(t *clusterv3.CircuitBreakers_Thresholds, list string, i int, seen *[numPriorities]int) (corev3.RoutingPriority, error) {
	path := join(index(list, i), "priority")
	p := t.GetPriority()
	if p != corev3.RoutingPriority_DEFAULT && p != corev3.RoutingPriority_HIGH {
		return p, configErrorf(path, "unknown routing priority %d", p)
	}
	if prev := seen[p]; prev >= 0 {
		// Envoy silently uses the first entry; a second one for the
		// same priority can only be a mistake.
		return p, configErrorf(path, "%s is already set by %s", p, index(list, prev))
	}
	seen[p] = i
	return p, nil
}

// orDefault unwraps an optional uint32.
func orDefault(v *wrapperspb.UInt32Value, def uint32) uint32 {
	if v == nil {
		return def
	}
	return v.GetValue()
}
