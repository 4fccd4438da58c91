package upstream

import corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

// OverrideHost is the host a request asks for by address, bypassing the
// load balancer: what the stateful session filter read of the session's
// cookie or header (Envoy's LoadBalancerContext::OverrideHost). The
// cluster picks it when it has a host of that address whose health
// status its common_lb_config.override_host_status allows.
type OverrideHost struct {
	// Address is the host's "ip:port" as the cluster's hosts spell it;
	// "" asks for none.
	Address string
	// Strict refuses the load balancer's pick when the host cannot be
	// picked: the request then fails (503; MissingStatus when the cluster
	// has no host of that address).
	Strict bool
	// MissingStatus is the HTTP status of a strict request whose host the
	// cluster does not have (status_on_strict_destination_not_found), 0
	// for 503.
	MissingStatus int
}

// OverrideOutcome is what became of a pick's OverrideHost.
type OverrideOutcome uint8

const (
	// OverrideNone: the pick asked for no host, or the cluster does not
	// take overrides (an aggregate, ORIGINAL_DST or dynamic forward
	// proxy cluster's balancer picked).
	OverrideNone OverrideOutcome = iota
	// OverridePicked: the override host was picked.
	OverridePicked
	// OverrideMissing: the cluster has no host of that address.
	OverrideMissing
	// OverrideRefused: the host's health status is not one the cluster's
	// override_host_status allows.
	OverrideRefused
)

// HealthStatus is the host's health as Envoy's Host::healthStatus
// reports it, in the terms of the configuration's HealthStatus: failed
// by active health checking or outlier detection first (TIMEOUT when the
// last check timed out, else UNHEALTHY), then the configured status when
// it takes the host out (UNHEALTHY, DRAINING, TIMEOUT), then DEGRADED
// when a check or outlier detection degraded it, else the configured
// status (UNKNOWN, HEALTHY or DEGRADED).
func (h *Host) HealthStatus() corev3.HealthStatus {
	f := h.HealthFlags()
	if f&unhealthyFlags != 0 {
		if f&ActiveHCTimeout != 0 {
			return corev3.HealthStatus_TIMEOUT
		}
		return corev3.HealthStatus_UNHEALTHY
	}
	if h.FailedEDSHealth() {
		return h.ConfigHealth
	}
	if f&degradedFlags != 0 {
		return corev3.HealthStatus_DEGRADED
	}
	return h.ConfigHealth
}
