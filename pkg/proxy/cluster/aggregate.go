package cluster

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// AggregateName is the aggregate cluster type's name (cluster_type.name),
// in the neutral spelling; the envoy. spelling names it too.
const AggregateName = "proxy.clusters.aggregate"

// aggregateSettings are an aggregate cluster's: the clusters it fails
// over across, in priority order.
type aggregateSettings struct {
	clusters []string
}

// isAggregateType reports whether a cluster_type names the aggregate
// cluster.
func isAggregateType(name string) bool {
	return strings.TrimPrefix(strings.TrimPrefix(name, "envoy."), "proxy.") == "clusters.aggregate"
}

// buildAggregate checks an aggregate cluster's configuration: its
// ClusterConfig, Envoy's CLUSTER_PROVIDED lb_policy, and the settings that
// would have no effect on a cluster without hosts of its own, which are
// refused rather than ignored.
func buildAggregate(c *clusterv3.Cluster) (*aggregateSettings, []error) {
	var errs []error
	ct := c.GetClusterType()
	cfg := &aggregatev3.ClusterConfig{}
	switch tc := ct.GetTypedConfig(); {
	case tc == nil:
		errs = append(errs, configErrorf("cluster_type.typed_config", "required: an envoy.extensions.clusters.aggregate.v3.ClusterConfig"))
	default:
		if err := tc.UnmarshalTo(cfg); err != nil {
			errs = append(errs, configErrorf("cluster_type.typed_config", "must be an envoy.extensions.clusters.aggregate.v3.ClusterConfig: %v", err))
		}
	}
	s := &aggregateSettings{clusters: cfg.GetClusters()}
	if tc := ct.GetTypedConfig(); tc != nil && len(s.clusters) == 0 {
		errs = append(errs, configErrorf("cluster_type.typed_config.clusters", "must list at least one cluster"))
	}
	seen := map[string]bool{}
	for i, name := range s.clusters {
		path := index("cluster_type.typed_config.clusters", i)
		switch {
		case name == "":
			errs = append(errs, configErrorf(path, "empty cluster name"))
		case name == c.GetName():
			errs = append(errs, configErrorf(path, "aggregate cluster %q lists itself (circular reference)", name))
		case seen[name]:
			errs = append(errs, configErrorf(path, "cluster %q is listed twice", name))
		}
		seen[name] = true
	}
	if p := c.GetLbPolicy(); !typedClusterProvided(c) && (p != clusterv3.Cluster_CLUSTER_PROVIDED || c.GetLoadBalancingPolicy() != nil) {
		// Envoy's cluster manager: a cluster type that provides its load
		// balancer needs lb_policy CLUSTER_PROVIDED (or the typed
		// cluster_provided policy).
		errs = append(errs, configErrorf("lb_policy", "cluster provided LB not specified but cluster %q provided one (the aggregate cluster needs lb_policy CLUSTER_PROVIDED)", c.GetName()))
	}
	// Fields of a cluster with hosts of its own, or of its connections:
	// an aggregate cluster has no hosts and opens no connection (the
	// clusters it lists do, with their own settings).
	unused := []struct {
		set  bool
		path string
	}{
		{c.GetLoadAssignment() != nil, "load_assignment"},
		{len(c.GetHealthChecks()) > 0, "health_checks"},
		{c.GetOutlierDetection() != nil, "outlier_detection"},
		{c.GetTransportSocket() != nil, "transport_socket"},
		{c.GetLbSubsetConfig() != nil, "lb_subset_config"},
		{len(c.GetTypedExtensionProtocolOptions()) > 0, "typed_extension_protocol_options"},
		//lint:ignore SA1019 refused on the aggregate cluster like its replacement
		{c.GetHttp2ProtocolOptions() != nil, "http2_protocol_options"},
		{c.GetUpstreamBindConfig() != nil, "upstream_bind_config"},
		{c.GetUpstreamConnectionOptions() != nil, "upstream_connection_options"},
		{c.GetEdsClusterConfig() != nil, "eds_cluster_config"},
	}
	for _, u := range unused {
		if u.set {
			errs = append(errs, configErrorf(u.path, "not supported on an aggregate cluster: it has no hosts or connections of its own (set it on the clusters it lists)"))
		}
	}
	return s, errs
}

// aggregateState is an aggregate cluster's run-time state: the clusters it
// lists are looked up by name among the active clusters at each pick, so
// that clusters cluster discovery adds, replaces or removes later count as
// soon as they are active, and its linearized priority set is rebuilt
// whenever one of theirs changes.
type aggregateState struct {
	names []string
	// lookup finds an active cluster by name (the manager's Cluster).
	lookup func(string) *Cluster
	// panicThreshold is the aggregate's own healthy_panic_threshold: it
	// decides the load only when every level is in panic.
	panicThreshold uint32
	cur            atomic.Pointer[linearized]
}

// linearized is Envoy's linearized priority set: the non-empty priority
// levels of the listed clusters, the first cluster's first, with the
// load over them; built whole, then only read.
type linearized struct {
	// from are what it was built from, one per listed cluster: the
	// cluster (nil when absent), its host set and balancers, compared by
	// identity to tell whether it is current.
	from   []linearSource
	load   *lb.PriorityLoad
	levels []linearLevel
	// place finds a host's cluster and linearized level.
	place map[*upstream.Host]hostPlace
}

// linearSource is one listed cluster as a linearization saw it.
type linearSource struct {
	c       *Cluster
	set     *hostSet
	bal     *lb.Balancer
	subsets *lb.SubsetBalancer
}

// linearLevel is one level of the linearized set: a priority level of a
// listed cluster.
type linearLevel struct {
	c        *Cluster
	priority int
}

// hostPlace is where a host of a listed cluster sits.
type hostPlace struct {
	c     *Cluster
	level int
}

// source reads a listed cluster's current state.
func (a *aggregateState) source(name string) linearSource {
	if a.lookup == nil {
		// Built outside a manager: no cluster to fail over to.
		return linearSource{}
	}
	c := a.lookup(name)
	if c == nil || c.agg != nil {
		// An aggregate cluster has no hosts of its own: listed in
		// another, it adds nothing (as in Envoy).
		return linearSource{}
	}
	return linearSource{c: c, set: c.set.Load(), bal: c.balancer.Load(), subsets: c.subsets.Load()}
}

// current returns the linearized set of the listed clusters as they are
// now, rebuilding it when one of them changed since it was built.
func (a *aggregateState) current() *linearized {
	lin := a.cur.Load()
	if lin != nil {
		fresh := true
		for i, name := range a.names {
			if a.source(name) != lin.from[i] {
				fresh = false
				break
			}
		}
		if fresh {
			return lin
		}
	}
	lin = a.linearize()
	a.cur.Store(lin)
	return lin
}

// linearize builds the linearized priority set of the listed clusters.
func (a *aggregateState) linearize() *linearized {
	lin := &linearized{from: make([]linearSource, len(a.names)), place: map[*upstream.Host]hostPlace{}}
	var counts []lb.LevelHosts
	for i, name := range a.names {
		src := a.source(name)
		lin.from[i] = src
		if src.c == nil || src.set == nil {
			continue
		}
		// The member's own policy, as Envoy's linearized host sets keep
		// each one's overprovisioning factor and weighted health.
		pol := src.set.policy
		for p, hosts := range src.set.priorities {
			if len(hosts) == 0 {
				continue
			}
			lh := lb.LevelHosts{Total: len(hosts), OverprovisioningFactor: pol.factor, Weighted: pol.weighted}
			for _, h := range hosts {
				w := uint64(h.Weight)
				if h.Excluded() {
					// Left out of the ratios, as Envoy's excluded hosts.
					lh.Total--
				} else {
					lh.TotalWeight += w
				}
				switch {
				case !h.Healthy():
				case h.Degraded():
					lh.Degraded++
					lh.DegradedWeight += w
				default:
					lh.Healthy++
					lh.HealthyWeight += w
				}
				lin.place[h] = hostPlace{c: src.c, level: len(counts)}
			}
			counts = append(counts, lh)
			lin.levels = append(lin.levels, linearLevel{c: src.c, priority: p})
		}
	}
	lin.load = lb.NewPriorityLoad(counts, a.panicThreshold)
	return lin
}

// pickAggregate is the aggregate cluster's pick: a level of the
// linearized set (leaving out the levels a retry's previous_priorities
// excludes), then a host of that level with the load balancer of the
// cluster it belongs to, as Envoy's aggregate load balancer delegates.
func (c *Cluster) pickAggregate(pc *upstream.PickContext) *upstream.Host {
	h := c.pickAggregateOnce(pc)
	if pc != nil && pc.HostReselections > 0 {
		// A retry's host predicates: pick again, level included, while
		// they refuse (Envoy's cluster entry asks the aggregate's load
		// balancer again).
		for i := 0; h != nil && i < pc.HostReselections && pc.Rejects(h); i++ {
			h = c.pickAggregateOnce(pc)
		}
	}
	return h
}

// pickAggregateOnce is one pick of pickAggregate, without host
// reselection.
func (c *Cluster) pickAggregateOnce(pc *upstream.PickContext) *upstream.Host {
	lin := c.agg.current()
	var excluded []bool
	if pc != nil {
		excluded = pc.ExcludedPriorities
	}
	level, degraded := lin.load.Choose(c.rand(), excluded)
	if level < 0 {
		return nil
	}
	lv := lin.levels[level]
	if pc == nil {
		pc = &upstream.PickContext{}
	}
	saved := *pc
	pc.ForceLevel, pc.Level, pc.LevelDegraded = true, lv.priority, degraded
	pc.ExcludedPriorities, pc.HostReselections = nil, 0
	h := lv.c.pickHost(pc)
	pc.ForceLevel, pc.Level, pc.LevelDegraded = saved.ForceLevel, saved.Level, saved.LevelDegraded
	pc.ExcludedPriorities, pc.HostReselections = saved.ExcludedPriorities, saved.HostReselections
	return h
}

// owner is the listed cluster a host belongs to, or belonged to when it
// was picked; nil when none of them is there any more.
func (a *aggregateState) owner(h *upstream.Host) *Cluster {
	if h == nil {
		return nil
	}
	if p, ok := a.current().place[h]; ok {
		return p.c
	}
	// The host set changed since the pick: look in the clusters' current
	// hosts.
	for _, name := range a.names {
		if c := a.source(name).c; c != nil && c.agg == nil && slices.Contains(c.set.Load().hosts, h) {
			return c
		}
	}
	// A host its cluster removed after the pick: that cluster still
	// carries the request to it, as it does its own (see acquireHTTP1).
	if slices.Contains(a.names, h.Cluster) {
		return a.source(h.Cluster).c
	}
	return nil
}

// LinearPriority is the priority level of h as the cluster's load
// balancer sees it, which a retry's previous_priorities leaves out: its
// own priority, or for an aggregate cluster its level in the linearized
// set; false when the aggregate's clusters no longer have h.
func (c *Cluster) LinearPriority(h *upstream.Host) (int, bool) {
	if c.agg == nil {
		return int(h.Priority), true
	}
	p, ok := c.agg.current().place[h]
	return p.level, ok
}

// IsAggregate reports whether c is an aggregate cluster, whose requests
// go to the hosts of the clusters it lists (see ForHost).
func (c *Cluster) IsAggregate() bool { return c.agg != nil }

// carrier is the cluster that carries a request of c (which Delegates)
// to h: the aggregate's cluster or the dynamic forward proxy's sub-cluster
// h belongs to, nil when none has it any more.
func (c *Cluster) carrier(h *upstream.Host) *Cluster {
	if c.subs != nil {
		return c.subClusterOf(h)
	}
	return c.agg.owner(h)
}

// Delegates reports whether c's requests are carried by the clusters its
// hosts belong to (see ForHost): an aggregate cluster's, and a dynamic
// forward proxy cluster's with sub-clusters.
func (c *Cluster) Delegates() bool { return c.agg != nil || c.subs != nil }

// errHostGone is an aggregate cluster's answer for a host none of its
// clusters has any more.
var errHostGone = errors.New("the host's cluster is no longer part of the aggregate cluster")

// AggregateAttempt is one request attempt of an aggregate cluster once its
// host is chosen: the cluster the host belongs to carries it (protocol,
// connection pool and its circuit breakers, connection stats), while the
// aggregate cluster keeps the request's identity and route-level
// accounting (name, metadata, request and response-code stats, the
// max_retries circuit breaker), as Envoy's router charges the route's
// cluster.
type AggregateAttempt struct {
	agg, under *Cluster
}

// ForHost returns the attempt view of a request of aggregate cluster c to
// h, nil when c is not an aggregate or none of its clusters has h.
func (c *Cluster) ForHost(h *upstream.Host) *AggregateAttempt {
	if c.subs != nil {
		// A dynamic forward proxy cluster's sub-cluster carries the
		// request as an aggregate's cluster does (Envoy's host belongs
		// to the sub-cluster, the route to the parent).
		if u := c.subClusterOf(h); u != nil {
			return &AggregateAttempt{agg: c, under: u}
		}
		return nil
	}
	if c.agg == nil {
		return nil
	}
	u := c.agg.owner(h)
	if u == nil {
		return nil
	}
	return &AggregateAttempt{agg: c, under: u}
}

// Name is the aggregate cluster's name.
func (a *AggregateAttempt) Name() string { return a.agg.Name() }

// Metadata is the aggregate cluster's metadata.
func (a *AggregateAttempt) Metadata() *corev3.Metadata { return a.agg.Metadata() }

// Stats are the aggregate cluster's stats.
func (a *AggregateAttempt) Stats() *upstream.ClusterStats { return a.agg.Stats() }

// AutoSNI is the auto_sni and auto_san_validation of the cluster whose
// connection carries the attempt: its TLS context makes the handshake.
func (a *AggregateAttempt) AutoSNI() *upstream.AutoSNI { return a.under.AutoSNI() }

// PoolStats are the stats of the cluster whose pool carries the attempt.
func (a *AggregateAttempt) PoolStats() *upstream.ClusterStats { return a.under.Stats() }

// PickHost picks with the aggregate cluster.
func (a *AggregateAttempt) PickHost(pc *upstream.PickContext) *upstream.Host {
	return a.agg.PickHost(pc)
}

// HTTP2For follows the underlying cluster's protocol options.
func (a *AggregateAttempt) HTTP2For(clientHTTP2 bool) bool { return a.under.HTTP2For(clientHTTP2) }

// HTTP2 reports whether the underlying cluster speaks HTTP/2 only.
func (a *AggregateAttempt) HTTP2() bool { return a.under.HTTP2() }

// HTTP1Trailers is the enable_trailers of the cluster that carries the
// attempt: its HTTP/1.1 codec frames the request.
func (a *AggregateAttempt) HTTP1Trailers() bool { return a.under.HTTP1Trailers() }

// HTTP1Format follows the underlying cluster's options.
func (a *AggregateAttempt) HTTP1Format() *upstream.HTTP1Format { return a.under.HTTP1Format() }

// MaxResponseHeadBytes follows the underlying cluster's options.
func (a *AggregateAttempt) MaxResponseHeadBytes() int { return a.under.MaxResponseHeadBytes() }

// MaxStreamDuration follows the underlying cluster's options.
func (a *AggregateAttempt) MaxStreamDuration() time.Duration { return a.under.MaxStreamDuration() }

// AcquireHTTP1For uses the underlying cluster's pool.
func (a *AggregateAttempt) AcquireHTTP1For(ctx context.Context, h *upstream.Host, rq upstream.Acquire) (*upstream.Conn, error) {
	return a.under.AcquireHTTP1For(ctx, h, rq)
}

// ReleaseHTTP1 gives the connection back to the underlying cluster's pool.
func (a *AggregateAttempt) ReleaseHTTP1(conn *upstream.Conn, reusable bool) {
	a.under.ReleaseHTTP1(conn, reusable)
}

// RoundTripHTTP2 uses the underlying cluster's HTTP/2 pool.
func (a *AggregateAttempt) RoundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error) {
	return a.under.RoundTripHTTP2(req, h)
}

// ConnectHost connects with the underlying cluster's settings.
func (a *AggregateAttempt) ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	return a.under.ConnectHost(ctx, h)
}

// TryRetry takes a unit of the aggregate cluster's max_retries breaker.
func (a *AggregateAttempt) TryRetry(high bool) bool { return a.agg.TryRetry(high) }

// ReleaseRetry gives it back.
func (a *AggregateAttempt) ReleaseRetry(high bool) { a.agg.ReleaseRetry(high) }

// HealthChecked reports whether the cluster that carries the attempt has
// active health checks.
func (a *AggregateAttempt) HealthChecked() bool { return a.under.HealthChecked() }

// ImmediateHealthCheckFail reaches the underlying cluster's health
// checker.
func (a *AggregateAttempt) ImmediateHealthCheckFail(h *upstream.Host) {
	a.under.ImmediateHealthCheckFail(h)
}

// DropOverload is the aggregate cluster's: the router draws once per
// request, before any attempt.
func (a *AggregateAttempt) DropOverload() bool { return a.agg.DropOverload() }

// aggregateCycles reports the aggregate clusters that reach themselves
// through the clusters they list (by name: lists maps each aggregate
// cluster to the clusters it lists), each cycle once, in a stable order.
func aggregateCycles(lists map[string][]string) [][]string {
	var cycles [][]string
	state := map[string]int{} // 0 unseen, 1 on the path, 2 done
	var path []string
	var visit func(string)
	visit = func(n string) {
		state[n] = 1
		path = append(path, n)
		for _, m := range lists[n] {
			if _, isAgg := lists[m]; !isAgg || m == n {
				// A cluster listing itself is refused with its own path.
				continue
			}
			switch state[m] {
			case 0:
				visit(m)
			case 1:
				i := slices.Index(path, m)
				cycles = append(cycles, append(slices.Clone(path[i:]), m))
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
	}
	for _, n := range sortedKeys(lists) {
		if state[n] == 0 {
			visit(n)
		}
	}
	return cycles
}

// cycleErrors refuses aggregate clusters that reach themselves through
// the aggregate clusters they list: among the clusters being configured
// (all, reported at pathOf(i)) and the active ones they do not replace.
func cycleErrors(all []*settings, active []*Cluster, pathOf func(i int) string) []error {
	lists := map[string][]string{}
	at := map[string]int{}
	for _, c := range active {
		if c.agg != nil {
			lists[c.Name()] = c.agg.names
		}
	}
	for i, s := range all {
		delete(lists, s.name)
		if s.aggregate != nil {
			lists[s.name] = s.aggregate.clusters
			at[s.name] = i
		}
	}
	var errs []error
	for _, cycle := range aggregateCycles(lists) {
		i, ok := -1, false
		for _, n := range cycle {
			if i, ok = at[n]; ok {
				break
			}
		}
		if !ok {
			// Among active clusters only, which were checked when they
			// came.
			continue
		}
		errs = append(errs, configErrorf(join(pathOf(i), "cluster_type.typed_config.clusters"), "circular reference between aggregate clusters: %s", strings.Join(cycle, " -> ")))
	}
	return errs
}
