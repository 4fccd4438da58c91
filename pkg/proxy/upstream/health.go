package upstream

import corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

// HealthFlag is one reason a host is out of load balancing, degraded, or
// otherwise marked, as Envoy's Host::HealthFlag. The flags set at run time
// (active health checking, outlier detection) live in the host's atomic
// flag word; the EDS ones derive from ConfigHealth.
type HealthFlag uint32

// The run-time health flags. /clusters renders them in Envoy's order.
const (
	// FailedActiveHC: the active health checker failed the host (or has
	// not passed it yet: a new host starts failed until its first check).
	FailedActiveHC HealthFlag = 1 << iota
	// FailedOutlierCheck: outlier detection ejected the host.
	FailedOutlierCheck
	// DegradedActiveHC: the health checker found the host degraded (an
	// HTTP check answered with x-envoy-degraded).
	DegradedActiveHC
	// PendingDynamicRemoval: discovery removed the host, which stays while
	// it still passes active health checks.
	PendingDynamicRemoval
	// PendingActiveHC: the host waits for its first active health check.
	PendingActiveHC
	// ExcludedViaImmediateHCFail: a check answered x-envoy-immediate-
	// health-check-fail.
	ExcludedViaImmediateHCFail
	// ActiveHCTimeout: the last active health check timed out.
	ActiveHCTimeout
	// DegradedOutlierDetection: outlier detection degraded the host.
	DegradedOutlierDetection
)

// unhealthyFlags take a host out of load balancing; degradedFlags make it
// degraded.
const (
	unhealthyFlags = FailedActiveHC | FailedOutlierCheck
	degradedFlags  = DegradedActiveHC | DegradedOutlierDetection
	// excludedFlags leave a host out of the load balancer's counts (the
	// denominator of priority spillover, locality weights and panic), as
	// Envoy's excluded hosts; panic mode may still pick it.
	excludedFlags = PendingActiveHC | ExcludedViaImmediateHCFail
)

// HealthFlags returns the host's run-time health flags.
func (h *Host) HealthFlags() HealthFlag { return HealthFlag(h.flags.Load()) }

// HasHealthFlag reports whether every flag of f is set.
func (h *Host) HasHealthFlag(f HealthFlag) bool { return h.HealthFlags()&f == f }

// SetHealthFlag sets the flags of f and reports whether that changed the
// host's coarse health (healthy, degraded or unhealthy, and excluded or
// not): the caller then
// has the cluster rebuild its load balancer.
func (h *Host) SetHealthFlag(f HealthFlag) (changed bool) {
	return h.updateFlags(func(old HealthFlag) HealthFlag { return old | f })
}

// ClearHealthFlag clears the flags of f and reports whether that changed
// the host's coarse health.
func (h *Host) ClearHealthFlag(f HealthFlag) (changed bool) {
	return h.updateFlags(func(old HealthFlag) HealthFlag { return old &^ f })
}

// updateFlags applies edit to the flag word atomically.
func (h *Host) updateFlags(edit func(HealthFlag) HealthFlag) bool {
	for {
		old := h.flags.Load()
		next := uint32(edit(HealthFlag(old)))
		if h.flags.CompareAndSwap(old, next) {
			return coarse(HealthFlag(old)) != coarse(HealthFlag(next))
		}
	}
}

// coarse reduces run-time flags to 0 (healthy), 1 (degraded) or 2
// (unhealthy), plus 4 when the host is excluded: a host leaving or
// joining the excluded ones changes the balancer's counts too.
func coarse(f HealthFlag) int {
	c := 0
	switch {
	case f&unhealthyFlags != 0:
		c = 2
	case f&degradedFlags != 0:
		c = 1
	}
	if f&excludedFlags != 0 {
		c |= 4
	}
	return c
}

// CopyHealthFlags gives h the run-time flags of from: a host kept across
// a membership update (same address) keeps its health-check and outlier
// state, as in Envoy.
func (h *Host) CopyHealthFlags(from *Host) { h.flags.Store(from.flags.Load()) }

// Excluded reports whether the host is left out of the load balancer's
// host counts: it waits for its first active health check
// (ignore_new_hosts_until_first_hc) or a check answered
// x-envoy-immediate-health-check-fail, as Envoy's excluded hosts. Such a
// host is also failed (not Healthy).
func (h *Host) Excluded() bool { return h.HealthFlags()&excludedFlags != 0 }

// FailedEDSHealth reports whether the configured health status takes the
// host out of load balancing.
func (h *Host) FailedEDSHealth() bool {
	switch h.ConfigHealth {
	case corev3.HealthStatus_UNHEALTHY, corev3.HealthStatus_DRAINING, corev3.HealthStatus_TIMEOUT:
		return true
	}
	return false
}

// Healthy reports whether the host may receive traffic: neither its
// configured health nor active health checking nor outlier detection
// takes it out, as Envoy's coarse health.
func (h *Host) Healthy() bool {
	return !h.FailedEDSHealth() && h.HealthFlags()&unhealthyFlags == 0
}

// Degraded reports whether the host is degraded: by its configured health
// status (DEGRADED) or by active health checking. A degraded host is not
// failed (Healthy still reports true), but the load balancer sends it
// traffic only when the healthy hosts of every priority cannot carry it
// all, as Envoy does.
func (h *Host) Degraded() bool {
	return h.ConfigHealth == corev3.HealthStatus_DEGRADED || h.HealthFlags()&degradedFlags != 0
}
