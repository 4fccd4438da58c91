package cluster

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// perHostLimit is a priority's max_connections per host; the zero value
// is none.
type perHostLimit struct {
	set bool
	max int64
}

// buildPerHostThresholds reads circuit_breakers.per_host_thresholds: each
// priority's max_connections per host (none for a priority without an
// entry, as Envoy's cluster then has no per-host limit). Envoy
// reads only max_connections there; the other limits set are reported in
// notes, as it ignores them. Errors and notes are relative to
// circuit_breakers.
func buildPerHostThresholds(cb *clusterv3.CircuitBreakers) (out [numPriorities]perHostLimit, notes []string, errs []error) {
	seen := [numPriorities]int{-1, -1}
	for i, t := range cb.GetPerHostThresholds() {
		path := index("per_host_thresholds", i)
		p, err := entryPriority(t, "per_host_thresholds", i, &seen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if t.GetMaxPendingRequests() != nil || t.GetMaxRequests() != nil || t.GetMaxRetries() != nil || t.GetRetryBudget() != nil || t.GetTrackRemaining() || t.GetMaxConnectionPools() != nil {
			notes = append(notes, "circuit_breakers."+path+": only max_connections applies per host; the other limits have no effect (Envoy ignores them too)")
		}
		out[p] = perHostLimit{set: true, max: int64(orDefault(t.GetMaxConnections(), DefaultMaxConnections))}
	}
	return out, notes, errs
}

// hostFull reports whether a new connection to h would pass the
// per-host max_connections of the priority of res (Envoy's
// canCreateConnection; the caller then counts upstream_cx_overflow and,
// as with the cluster's limit, opens one anyway when the host's pool has
// none). open is how many connections the host has in the pool asking
// (HTTP/1.1: those being opened count too), or -1 to count the host's
// open connections.
func hostFull(h *upstream.Host, res *resources, open int64) bool {
	if !res.perHostCx.set {
		return false
	}
	if open < 0 {
		open = h.Stats.CxActive.Load()
	}
	return open >= res.perHostCx.max
}
