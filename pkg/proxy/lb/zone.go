package lb

import (
	"math"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Envoy's defaults and runtime keys for zone-aware routing.
const (
	// DefaultZoneRoutingEnabled is the percentage of picks considered for
	// zone-aware routing when routing_enabled is unset.
	DefaultZoneRoutingEnabled = 100
	// DefaultMinClusterSize is the fewest healthy hosts of priority 0
	// with which zone-aware routing is done.
	DefaultMinClusterSize = 6

	RuntimeZoneRoutingEnabled = "upstream.zone_routing.enabled"
	RuntimeMinClusterSize     = "upstream.zone_routing.min_cluster_size"
	// RuntimeForceLocalZoneMinSize, when above 0, forces local-zone
	// routing with that minimum whatever the configuration says.
	RuntimeForceLocalZoneMinSize = "upstream.zone_routing.force_local_zone.min_size"
)

// ZoneConfig turns on zone-aware routing for a balancer: the cluster
// manager has a local cluster (cluster_manager.local_cluster_name).
type ZoneConfig struct {
	// LocalHosts are the local cluster's hosts of priority 0: where the
	// proxies sending to this cluster run.
	LocalHosts []*upstream.Host
	// RoutingEnabled is the percentage of picks that zone-aware routing
	// considers (zone_aware_lb_config.routing_enabled), overridden by the
	// runtime key upstream.zone_routing.enabled.
	RoutingEnabled uint32
	// MinClusterSize is the fewest healthy hosts of priority 0 for zone
	// routing (zone_aware_lb_config.min_cluster_size), overridden by the
	// runtime key upstream.zone_routing.min_cluster_size; read when the
	// balancer is built, as Envoy reads it when hosts change.
	MinClusterSize uint64
	// ForceLocalZoneMinSize, when not 0, sends every pick to the proxy's
	// own locality when the level has at least that many healthy hosts
	// there, whatever the shares of the localities (force_local_zone's
	// min_size, 1 for the deprecated force_locality_direct_routing),
	// and zone routing then applies even with a local cluster in one
	// locality; the runtime key upstream.zone_routing.force_local_zone.
	// min_size overrides it when above 0.
	ForceLocalZoneMinSize uint32
	// ByWeight computes the localities' shares from their healthy hosts'
	// load_balancing_weight rather than their number (locality_basis
	// HEALTHY_HOSTS_WEIGHT).
	ByWeight bool
	// Runtime returns the runtime's current snapshot; nil for none.
	Runtime func() *runtime.Snapshot
}

// forceLocalZone is the force_local_zone minimum in effect, 0 for none:
// the runtime's when above 0, else the configuration's.
func (cfg *ZoneConfig) forceLocalZone() uint32 {
	if cfg.Runtime != nil {
		if snap := cfg.Runtime(); snap != nil {
			if v := snap.Uint64(RuntimeForceLocalZoneMinSize, 0); v > 0 {
				return uint32(min(v, math.MaxUint32))
			}
		}
	}
	return cfg.ForceLocalZoneMinSize
}

// zoneRouting is the zone-aware routing state of priority 0 when it
// routes by zone (Envoy's LocalityDirect and LocalityResidual): the
// upstream localities are those of the level, the local one first.
type zoneRouting struct {
	// direct: the local locality can take every request.
	direct bool
	// localPercent is the share, in 1/10000, of picks that stay in the
	// local locality when it cannot take them all.
	localPercent uint64
	// residual is the cumulative spare capacity of each locality, in
	// 1/10000, for the picks that cross zones.
	residual []uint64
	// localPanic: the local cluster is in panic, and then no pick routes
	// by zone.
	localPanic bool
	enabled    runtime.Fraction
	runtime    func() *runtime.Snapshot
}

// localityPercentages are one upstream locality's share of the healthy
// hosts of the local cluster and of the upstream level, in 1/10000.
type localityPercentages struct {
	local, upstream uint64
}

// newZoneRouting is Envoy's regenerateLocalityRoutingStructures for
// priority 0: nil when zone routing does not apply (too few localities on
// either side, the local cluster without hosts in the proxy's locality,
// too few healthy hosts), counting why in stats.
func newZoneRouting(cfg *ZoneConfig, up *localities, healthyP0 int, local *upstream.Locality, panicThreshold uint32, st *Stats) *zoneRouting {
	st.inc(RecalculateZoneStructures)
	if len(up.groups) < 2 {
		return nil
	}
	force := cfg.forceLocalZone()
	lc := groupLocalities(cfg.LocalHosts, local, nil)
	if len(lc.groups) < 2 && force == 0 {
		return nil
	}
	if !lc.hasLocal || len(lc.groups[0].all) == 0 {
		st.inc(LocalClusterNotOK)
		return nil
	}
	minSize := cfg.MinClusterSize
	if cfg.Runtime != nil {
		if snap := cfg.Runtime(); snap != nil {
			minSize = snap.Uint64(RuntimeMinClusterSize, minSize)
		}
	}
	if uint64(healthyP0) < minSize {
		st.inc(ZoneClusterTooSmall)
		return nil
	}

	z := &zoneRouting{
		enabled: runtime.Fraction{Key: RuntimeZoneRoutingEnabled, Numerator: uint64(cfg.RoutingEnabled), Denominator: 100},
		runtime: cfg.Runtime,
	}
	var localCounts levelCounts
	for _, g := range lc.groups {
		localCounts.total += len(g.all)
		localCounts.healthy += len(g.healthy)
		localCounts.degraded += len(g.degraded)
	}
	z.localPanic = inPanic(localCounts, panicThreshold)

	pct := localityPercentagesOf(&lc, up, cfg.ByWeight)
	if up.hasLocal && ((pct[0].upstream > 0 && pct[0].upstream >= pct[0].local) ||
		(force > 0 && len(up.groups[0].healthy) >= int(force))) {
		z.direct = true
		return z
	}
	if up.hasLocal && pct[0].local > 0 {
		z.localPercent = pct[0].upstream * 10000 / pct[0].local
	}
	z.residual = make([]uint64, len(pct))
	var last uint64
	for i, p := range pct {
		if !(i == 0 && up.hasLocal) && p.upstream > p.local {
			last += p.upstream - p.local
		}
		z.residual[i] = last
	}
	return z
}

// localityPercentagesOf is Envoy's calculateLocalityPercentages: for each
// upstream locality, the share of the local cluster's healthy hosts in
// that locality and the share of the upstream's healthy hosts, by their
// number, or by their weights when byWeight (locality_basis
// HEALTHY_HOSTS_WEIGHT).
func localityPercentagesOf(local, up *localities, byWeight bool) []localityPercentages {
	size := func(hosts []*upstream.Host) uint64 {
		if byWeight {
			return sumWeights(hosts)
		}
		return uint64(len(hosts))
	}
	var totalLocal, totalUp uint64
	counts := map[upstream.Locality]uint64{}
	for _, g := range local.groups {
		n := size(g.healthy)
		totalLocal += n
		if len(g.healthy) > 0 {
			counts[g.locality] = n
		}
	}
	for _, g := range up.groups {
		totalUp += size(g.healthy)
	}
	out := make([]localityPercentages, len(up.groups))
	for i, g := range up.groups {
		if len(g.healthy) == 0 {
			continue
		}
		if totalLocal > 0 {
			out[i].local = 10000 * counts[g.locality] / totalLocal
		}
		if totalUp > 0 {
			out[i].upstream = 10000 * size(g.healthy) / totalUp
		}
	}
	return out
}

// routingEnabled draws whether this pick is considered for zone routing.
func (z *zoneRouting) routingEnabled(random uint64) bool {
	if z.runtime != nil {
		if snap := z.runtime(); snap != nil {
			return z.enabled.Enabled(snap, random)
		}
	}
	return z.enabled.Enabled(nil, random)
}

// chooseLocality is Envoy's tryChooseLocalLocalityHosts: the index of the
// locality this pick goes to.
func (z *zoneRouting) chooseLocality(rand func() uint64, n int, st *Stats) int {
	if z.direct {
		st.inc(ZoneRoutingAllDirectly)
		return 0
	}
	if rand()%10000 < z.localPercent {
		st.inc(ZoneRoutingSampled)
		return 0
	}
	st.inc(ZoneRoutingCrossZone)
	last := z.residual[n-1]
	if last == 0 {
		// Rounding left no locality with spare capacity: any will do.
		st.inc(ZoneNoCapacityLeft)
		return int(rand() % uint64(n))
	}
	threshold := rand() % last
	i := 0
	for threshold >= z.residual[i] {
		i++
	}
	return i
}
