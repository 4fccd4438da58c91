package cluster

import (
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// overrideStatuses is the set of health statuses a host a request asks
// for by address may have to be picked (common_lb_config
// .override_host_status): bit i stands for HealthStatus i.
type overrideStatuses uint32

// defaultOverrideStatuses are Envoy's when override_host_status is unset:
// UNKNOWN, HEALTHY and DEGRADED.
const defaultOverrideStatuses = overrideStatuses(1<<corev3.HealthStatus_UNKNOWN | 1<<corev3.HealthStatus_HEALTHY | 1<<corev3.HealthStatus_DEGRADED)

// buildOverrideStatuses reads common_lb_config.override_host_status, as
// Envoy's createOverrideHostStatus: unset gives the default set, a set
// given with no status allows none (overrides then never pick a host).
func buildOverrideStatuses(c *clusterv3.Cluster) overrideStatuses {
	set := c.GetCommonLbConfig().GetOverrideHostStatus()
	if set == nil {
		return defaultOverrideStatuses
	}
	var s overrideStatuses
	for _, st := range set.GetStatuses() {
		// ValidateAll has refused values outside the enum.
		s |= 1 << uint32(st)
	}
	return s
}

// allows reports whether a host of health status st may be picked as an
// override host.
func (s overrideStatuses) allows(st corev3.HealthStatus) bool {
	return st >= 0 && st < 32 && s&(1<<uint32(st)) != 0
}

// overrideIndex finds a host set's hosts by address for override picks.
// It is built on the first override pick of the set, so that clusters no
// stateful session names pay nothing.
type overrideIndex struct {
	once   sync.Once
	byAddr map[string]*upstream.Host
}

// hostByAddress returns the host of hs at addr, nil when there is none:
// the first of that address, as Envoy's cross-priority host map keeps.
func (hs *hostSet) hostByAddress(addr string) *upstream.Host {
	if hs.byAddr != nil {
		return hs.byAddr[addr]
	}
	hs.override.once.Do(func() {
		m := make(map[string]*upstream.Host, len(hs.hosts))
		for _, h := range hs.hosts {
			if _, dup := m[h.Address]; !dup {
				m[h.Address] = h
			}
		}
		hs.override.byAddr = m
	})
	return hs.override.byAddr[addr]
}

// pickOverride picks the host pc asks for by address when the cluster has
// it with an allowed health status (Envoy's selectOverrideHost), and
// records the outcome in pc; nil when it cannot be picked.
func (c *Cluster) pickOverride(pc *upstream.PickContext) *upstream.Host {
	hs := c.set.Load()
	var h *upstream.Host
	if hs != nil {
		h = hs.hostByAddress(pc.Override.Address)
	}
	switch {
	case h == nil:
		pc.OverrideOutcome = upstream.OverrideMissing
	case !c.settings.overrideStatuses.allows(h.HealthStatus()):
		pc.OverrideOutcome = upstream.OverrideRefused
	default:
		pc.OverrideOutcome = upstream.OverridePicked
		return h
	}
	return nil
}
