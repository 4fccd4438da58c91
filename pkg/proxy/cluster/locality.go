package cluster

import (
	"math"
	"sync"
	"sync/atomic"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// zoneSettings are a cluster's zone-aware routing parameters
// (common_lb_config.zone_aware_lb_config, Envoy's defaults when unset).
// They apply once the cluster manager has a local cluster.
type zoneSettings struct {
	routingEnabled uint32
	minClusterSize uint64
	// forceLocalZone and byWeight are the typed policies' force_local_zone
	// (or force_locality_direct_routing) and locality_basis (see
	// lb.ZoneConfig).
	forceLocalZone uint32
	byWeight       bool
}

// localityLbConfig is the locality part of a load-balancing policy:
// Envoy's LocalityLbConfig, given by common_lb_config's
// zone_aware_lb_config or locality_weighted_lb_config, or by a typed
// load_balancing_policy's locality_lb_config. The fields are the
// configured values; nil pointers are unset fields.
type localityLbConfig struct {
	// LocalityWeighted is locality_weighted_lb_config.
	LocalityWeighted bool
	// RoutingEnabled, MinClusterSize and FailTrafficOnPanic are
	// zone_aware_lb_config's.
	RoutingEnabled     *typev3.Percent
	MinClusterSize     *wrapperspb.UInt64Value
	FailTrafficOnPanic bool
	// ForceLocalZone and ByWeight are the typed zone_aware_lb_config's
	// alone: force_local_zone's min_size (1 when unset, and for
	// force_locality_direct_routing), 0 when neither is set; locality_basis
	// HEALTHY_HOSTS_WEIGHT.
	ForceLocalZone uint32
	ByWeight       bool
}

// localityFromCommon reads common_lb_config's locality settings.
func localityFromCommon(c *clusterv3.Cluster_CommonLbConfig) localityLbConfig {
	return localityFrom(c.GetLocalityWeightedLbConfig() != nil, c.GetZoneAwareLbConfig())
}

// localityFromTyped reads a typed round robin, least request or random
// policy's locality_lb_config, which Envoy applies as common_lb_config's.
func localityFromTyped(c *commonv3.LocalityLbConfig) localityLbConfig {
	l := localityFrom(c.GetLocalityWeightedLbConfig() != nil, c.GetZoneAwareLbConfig())
	if l.LocalityWeighted {
		return l
	}
	z := c.GetZoneAwareLbConfig()
	switch {
	case z.GetForceLocalZone() != nil:
		// force_local_zone supersedes the deprecated field, as in Envoy.
		l.ForceLocalZone = 1
		if m := z.GetForceLocalZone().GetMinSize(); m != nil {
			l.ForceLocalZone = m.GetValue()
		}
	//lint:ignore SA1019 Envoy still honours force_locality_direct_routing, as force_local_zone with min_size 1
	case z.GetForceLocalityDirectRouting():
		l.ForceLocalZone = 1
	}
	l.ByWeight = z.GetLocalityBasis() == commonv3.LocalityLbConfig_ZoneAwareLbConfig_HEALTHY_HOSTS_WEIGHT
	return l
}

// zoneAwareProto is what the legacy and the typed ZoneAwareLbConfig
// share (a typed nil reads as unset).
type zoneAwareProto interface {
	GetRoutingEnabled() *typev3.Percent
	GetMinClusterSize() *wrapperspb.UInt64Value
	GetFailTrafficOnPanic() bool
}

// localityFrom is a LocalityLbConfig: locality-weighted, or zone-aware
// with z's settings.
func localityFrom(weighted bool, z zoneAwareProto) localityLbConfig {
	if weighted {
		return localityLbConfig{LocalityWeighted: true}
	}
	return localityLbConfig{
		RoutingEnabled:     z.GetRoutingEnabled(),
		MinClusterSize:     z.GetMinClusterSize(),
		FailTrafficOnPanic: z.GetFailTrafficOnPanic(),
	}
}

// applyLocality checks a localityLbConfig and sets it in s. path is where
// its zone-aware fields sit ("common_lb_config.zone_aware_lb_config").
func (s *settings) applyLocality(l localityLbConfig, path string) []error {
	var errs []error
	s.lb.LocalityWeighted = l.LocalityWeighted
	s.lb.FailTrafficOnPanic = l.FailTrafficOnPanic
	s.zone = zoneSettings{routingEnabled: lb.DefaultZoneRoutingEnabled, minClusterSize: lb.DefaultMinClusterSize}
	if p := l.RoutingEnabled; p != nil {
		if v := p.GetValue(); math.IsNaN(v) || v < 0 || v > 100 {
			errs = append(errs, configErrorf(join(path, "routing_enabled.value"), "%v is not a percentage (0 to 100)", v))
		} else {
			// Envoy rounds the percentage to an integer.
			s.zone.routingEnabled = uint32(math.Round(v))
		}
	}
	if m := l.MinClusterSize; m != nil {
		s.zone.minClusterSize = m.GetValue()
	}
	s.zone.forceLocalZone, s.zone.byWeight = l.ForceLocalZone, l.ByWeight
	return errs
}

// zoneAware reports whether the cluster's load balancer routes by zone
// when there is a local cluster: Envoy's zone-aware balancers (round
// robin, least request, random), not the hashing ones nor a
// cluster-provided one.
func (s *settings) zoneAware() bool {
	if s.policy == nil || s.origDst != nil {
		return false
	}
	switch s.policy.Name() {
	case "ROUND_ROBIN", "LEAST_REQUEST", "RANDOM":
		return true
	}
	return false
}

// zoneSource is the cluster manager's local cluster
// (cluster_manager.local_cluster_name) as zone-aware routing reads it:
// the local cluster's hosts of priority 0, and the clusters to rebuild
// when they change.
type zoneSource struct {
	name  string
	hosts atomic.Pointer[[]*upstream.Host]

	mu       sync.Mutex
	watchers map[*Cluster]struct{}
}

func newZoneSource(name string) *zoneSource {
	z := &zoneSource{name: name, watchers: map[*Cluster]struct{}{}}
	z.hosts.Store(new([]*upstream.Host))
	return z
}

// localHosts returns the local cluster's current hosts of priority 0.
func (z *zoneSource) localHosts() []*upstream.Host { return *z.hosts.Load() }

// watch registers a zone-aware cluster, whose balancer is rebuilt when
// the local cluster's hosts change.
func (z *zoneSource) watch(c *Cluster) {
	z.mu.Lock()
	z.watchers[c] = struct{}{}
	z.mu.Unlock()
}

// unwatch forgets a closed cluster.
func (z *zoneSource) unwatch(c *Cluster) {
	z.mu.Lock()
	delete(z.watchers, c)
	z.mu.Unlock()
}

// publish sets the local cluster's hosts.
func (z *zoneSource) publish(priorities [][]*upstream.Host) {
	var p0 []*upstream.Host
	if len(priorities) > 0 {
		p0 = priorities[0]
	}
	z.hosts.Store(&p0)
}

// rebuildWatchers rebuilds the balancers of the zone-aware clusters other
// than the local one, after the local cluster's hosts changed (Envoy
// regenerates their zone routing then).
func (z *zoneSource) rebuildWatchers(local *Cluster) {
	z.mu.Lock()
	watchers := make([]*Cluster, 0, len(z.watchers))
	for c := range z.watchers {
		if c != local {
			watchers = append(watchers, c)
		}
	}
	z.mu.Unlock()
	for _, c := range watchers {
		c.rebuildBalancer()
	}
}

// rebuildBalancer builds the balancer again over the same hosts: the
// local cluster changed.
func (c *Cluster) rebuildBalancer() {
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	if c.closed.Load() {
		return
	}
	c.storeBalancer(c.set.Load(), nil, nil)
}

// storeBalancer builds and publishes the balancer of a host set: the
// subset balancer of a cluster with lb_subset_config
// (lb.SubsetBalancer.Update), else the plain one, each carried on from
// the one it replaces (lb.Balancer.Update). updateMu
// is held; old is the set hs replaces (nil when it rebuilds the same
// set), whose hosts keep their place in slow start, and ch what an EDS
// update knows of the change (nil for nothing).
func (c *Cluster) storeBalancer(hs, old *hostSet, ch *setChange) {
	cfg := c.lbConfig(hs, old, ch)
	var change *lb.Change
	if ch.appliesTo(old) && ch.exact {
		change = &lb.Change{Added: ch.added, Removed: ch.gone}
	}
	if sc := c.settings.subsets; sc != nil {
		c.subsets.Store(c.subsets.Load().Update(hs.priorities, change, sc, cfg))
		return
	}
	c.balancer.Store(c.balancer.Load().Update(hs.priorities, change, cfg))
}
