package cluster

import (
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
		p := t.GetPriority()
		if p != corev3.RoutingPriority_DEFAULT && p != corev3.RoutingPriority_HIGH {
			errs = append(errs, configErrorf(join(path, "priority"), "unknown routing priority %d", p))
			continue
		}
		if prev := seen[p]; prev >= 0 {
			// Envoy silently uses the first entry; a second one for the
			// same priority can only be a mistake.
			errs = append(errs, configErrorf(join(path, "priority"), "%s is already set by %s", p, index("thresholds", prev)))
			continue
		}
		seen[p] = i
		out[p] = Thresholds{
			MaxConnections:     orDefault(t.GetMaxConnections(), DefaultMaxConnections),
			MaxPendingRequests: orDefault(t.GetMaxPendingRequests(), DefaultMaxPendingRequests),
			MaxRequests:        orDefault(t.GetMaxRequests(), DefaultMaxRequests),
			MaxRetries:         orDefault(t.GetMaxRetries(), DefaultMaxRetries),
			TrackRemaining:     t.GetTrackRemaining(),
		}
	}
	return out, errs
}

// orDefault unwraps an optional uint32.
func orDefault(v *wrapperspb.UInt32Value, def uint32) uint32 {
	if v == nil {
		return def
	}
	return v.GetValue()
}
