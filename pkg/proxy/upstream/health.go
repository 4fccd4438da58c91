package upstream

import corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

// Degraded reports whether the configured health status is DEGRADED. A
// degraded host is not failed (Healthy still reports true), but the load
// balancer sends it traffic only when the healthy hosts of every priority
// cannot carry it all, as Envoy does.
func (h *Host) Degraded() bool {
	return h.ConfigHealth == corev3.HealthStatus_DEGRADED
}
