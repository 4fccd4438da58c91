package cluster

import (
	"errors"
	"sync"
	"sync/atomic"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// edsSettings are an EDS cluster's: the name its load assignment is
// published under. Where it comes from (eds_cluster_config.eds_config) is
// the server's business.
type edsSettings struct {
	serviceName string
	// configuredName is eds_cluster_config.service_name as written, ""
	// when unset: what load reports name (Envoy's edsServiceName()).
	configuredName string
}

// buildEDS checks an EDS cluster's own fields. Its endpoints come from
// discovery, so a load_assignment in the cluster is refused rather than
// silently replaced.
func buildEDS(c *clusterv3.Cluster) (*edsSettings, []error) {
	var errs []error
	if c.GetLoadAssignment() != nil {
		errs = append(errs, configErrorf("load_assignment", "an EDS cluster's endpoints come from eds_cluster_config; remove load_assignment"))
	}
	name := c.GetEdsClusterConfig().GetServiceName()
	if name == "" {
		name = c.GetName()
	}
	return &edsSettings{serviceName: name, configuredName: c.GetEdsClusterConfig().GetServiceName()}, errs
}

// edsState is an EDS cluster's warming: warm is closed by its first load
// assignment, or when the server stops waiting for one. sources are the
// entries the installed hosts were built from (see edsSources).
type edsState struct {
	warm chan struct{}
	once sync.Once
	// hookMu guards warmDone and onWarm (see whenWarm).
	hookMu   sync.Mutex
	warmDone bool
	onWarm   func()
	sources  atomic.Pointer[edsSources]
	// stats are the subscription's stats (see EDSStats).
	stats *EDSStats
}

// minSourcedEndpoints is the size from which an assignment's entries are
// kept beside its hosts (edsSources): the xds decoder reuses the decoded
// entries of assignments this large (and only these), so only they come
// back as the same messages; a small assignment would keep its decoded
// messages alive for nothing.
const minSourcedEndpoints = 64

// edsSources are the lb_endpoints entries an installed EDS host set was
// built from, by priority level in the set's order: entry i of a level
// built host i of that level. A later assignment's entry that is the
// same message (decoded messages never change; the xds decoder hands
// back the last response's message for an entry unchanged byte for byte)
// at the same place, priority, locality and locality weight is that host
// without being checked or compared again (hostReuse.takeSource).
type edsSources struct {
	hosts   [][]*upstream.Host
	entries [][]*endpointv3.LbEndpoint
	// groups are, beside entries, the index in descs of each entry's
	// locality_lb_endpoints group: its hosts' priority, locality,
	// locality weight and locality metadata, which takeSource compares
	// without reading the host.
	groups [][]uint32
	descs  []sourceGroup
}

// sourceGroup is what a locality_lb_endpoints group gives its hosts.
type sourceGroup struct {
	priority uint32
	locality upstream.Locality
	weight   uint32
	metadata *corev3.Metadata
}

// newEDSSources records the entries and groups hosts were built from:
// eps are buildEndpoints' of cla, hosts their levels.
func newEDSSources(cla *endpointv3.ClusterLoadAssignment, eps []endpoint, hosts [][]*upstream.Host) *edsSources {
	src := &edsSources{
		hosts:   hosts,
		entries: make([][]*endpointv3.LbEndpoint, len(hosts)),
		groups:  make([][]uint32, len(hosts)),
	}
	for p, level := range hosts {
		src.entries[p] = make([]*endpointv3.LbEndpoint, 0, len(level))
		src.groups[p] = make([]uint32, 0, len(level))
	}
	for i := range eps {
		p := eps[i].priority
		src.entries[p] = append(src.entries[p], eps[i].lbe)
		src.groups[p] = append(src.groups[p], eps[i].group)
	}
	weights := localityWeights(cla)
	for _, lle := range cla.GetEndpoints() {
		loc := localityOf(lle)
		src.descs = append(src.descs, sourceGroup{lle.GetPriority(), loc, weights[localityKey{lle.GetPriority(), loc}], lle.GetMetadata()})
	}
	return src
}

func newEDSState(st *EDSStats) *edsState {
	return &edsState{warm: make(chan struct{}), stats: st}
}

// EDSServiceName returns the name of the load assignment an EDS cluster
// wants (eds_cluster_config.service_name, else the cluster's name), and
// false for other clusters.
func (c *Cluster) EDSServiceName() (string, bool) {
	if c.settings.eds == nil {
		return "", false
	}
	return c.settings.eds.serviceName, true
}

// EDSHostSet is what SetEDSHosts installs from a checked load assignment:
// its hosts by priority and its drop_overloads ratio.
type EDSHostSet struct {
	// Priorities are the assignment's hosts by priority.
	Priorities [][]*upstream.Host
	// drop is policy.drop_overloads.
	drop dropOverload
	// policy is the rest of the assignment's policy that the balancer
	// follows.
	policy assignmentPolicy
	// sources are the entries the hosts were built from, nil for a
	// small assignment.
	sources *edsSources
	// change is what the update knows of the set it replaces.
	change *setChange
}

// EDSHosts checks a load assignment for an EDS cluster and returns its
// hosts by priority and its policy's drop_overloads, for SetEDSHosts;
// nothing changes yet, so that every assignment of a discovery response is
// checked before any applies. An endpoint identical to one of the
// cluster's hosts keeps that host (see hostReuse).
// Errors are relative to the load assignment.
func (c *Cluster) EDSHosts(cla *endpointv3.ClusterLoadAssignment) (EDSHostSet, error) {
	if c.settings.eds == nil {
		return EDSHostSet{}, errors.New("not an EDS cluster")
	}
	var errs []error
	p := cla.GetPolicy()
	// Each assignment sets the policy anew: one without a factor goes
	// back to Envoy's default, as Envoy's EDS update does.
	policy := assignmentPolicy{factor: lb.DefaultOverprovisioningFactor, weighted: p.GetWeightedPriorityHealth()}
	if f := p.GetOverprovisioningFactor(); f != nil {
		if f.GetValue() == 0 {
			errs = append(errs, configErrorf("policy.overprovisioning_factor", "must be above 0"))
		}
		policy.factor = f.GetValue()
	}
	drop, err := buildDropOverload(p)
	if err != nil {
		errs = append(errs, prefixed("policy", err))
	}
	reuse := newHostReuse(c.set.Load())
	reuse.withSources(c.eds.sources.Load())
	eps, herrs := buildEndpoints(c.settings.name, cla, false, reuse)
	errs = append(errs, herrs...)
	if err := errors.Join(errs...); err != nil {
		return EDSHostSet{}, err
	}
	hs := EDSHostSet{Priorities: levelsOf(eps), drop: drop, policy: policy, change: reuse.change()}
	if len(eps) >= minSourcedEndpoints {
		hs.sources = newEDSSources(cla, eps, hs.Priorities)
	}
	return hs, nil
}

// SetEDSHosts installs an EDS cluster's hosts, drop ratio and balancing
// policy (overprovisioning factor, weighted priority health; from
// EDSHosts) and ends its warming.
func (c *Cluster) SetEDSHosts(hs EDSHostSet) {
	c.setDropOverload(hs.drop)
	if c.eds != nil {
		c.eds.sources.Store(hs.sources)
	}
	priorities := hs.Priorities
	if len(priorities) == 0 {
		priorities = [][]*upstream.Host{nil}
	}
	c.updateMu.Lock()
	c.assigned = hs.policy
	c.installLocked(priorities, true, hs.change)
	c.updateMu.Unlock()
	c.EndWarming()
}

// DropEDSHosts empties an EDS cluster whose load assignment went stale
// (its policy.endpoint_stale_after passed without a new one), as Envoy's
// update with an empty assignment: no host and the default policy; the
// drop_overloads ratio stays, as Envoy's does.
func (c *Cluster) DropEDSHosts() {
	if c.eds == nil || c.closed.Load() {
		return
	}
	c.eds.sources.Store(nil)
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	c.assigned = assignmentPolicy{factor: lb.DefaultOverprovisioningFactor}
	c.installLocked([][]*upstream.Host{nil}, true, nil)
}

// EndWarming ends an EDS cluster's warming without hosts: the initial
// fetch timed out. It reports whether the cluster was still warming.
func (c *Cluster) EndWarming() bool {
	if c.eds == nil {
		return false
	}
	ended := false
	c.eds.once.Do(func() {
		close(c.eds.warm)
		ended = true
	})
	if ended {
		c.eds.hookMu.Lock()
		c.eds.warmDone = true
		f := c.eds.onWarm
		c.eds.onWarm = nil
		c.eds.hookMu.Unlock()
		if f != nil {
			f()
		}
	}
	return ended
}

// whenWarm arranges for f to be called once the cluster's warming ends
// (by EndWarming's caller, right after warm is closed), and reports
// whether it did: false when the warming had already ended, f is then
// not called. It stands for a goroutine waiting on warm, which cost a
// goroutine (and its stack) per cluster of a large update. f is called
// with whatever locks EndWarming's caller holds (the manager's dyn.mu
// when it retires the cluster): it must take none of them.
func (e *edsState) whenWarm(f func()) bool {
	e.hookMu.Lock()
	defer e.hookMu.Unlock()
	if e.warmDone {
		return false
	}
	e.onWarm = f
	return true
}

// EDSClusters returns the static EDS clusters, in configuration order.
func (m *Manager) EDSClusters() []*Cluster {
	var out []*Cluster
	for _, c := range m.snap.Load().clusters {
		if c.eds != nil && !c.AddedViaAPI() {
			out = append(out, c)
		}
	}
	return out
}
