package cluster

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Cluster is one upstream cluster: its hosts, its load balancer, its
// connection pools and its stats. Its methods are safe for concurrent use.
// A DNS cluster's hosts change while it runs: requests read the current
// host set with one atomic load, and a change swaps in a new one.
type Cluster struct {
	settings *settings
	stats    *upstream.ClusterStats
	extra    extraStats
	// res are the circuit breakers of each routing priority.
	res *[numPriorities]resources
	// waiting counts HTTP/1.1 requests waiting for a connection that the
	// max_connections breaker kept from opening: only then does a closing
	// connection look for one to wake.
	waiting atomic.Int32

	set atomic.Pointer[hostSet]
	// drop is the load assignment's drop_overloads ratio, in parts per
	// million (see DropOverload); an EDS update replaces it.
	drop atomic.Uint32
	// dropCategory is the drop_overloads entry's category, which load
	// reports count drops under; loadDrops counts the drops for them.
	dropCategory atomic.Pointer[string]
	loadDrops    loadReportDrops
	balancer     atomic.Pointer[lb.Balancer]
	// subsets is the balancer of a cluster with lb_subset_config, which
	// then has no balancer.
	subsets atomic.Pointer[lb.SubsetBalancer]
	// updateMu serializes host set changes.
	updateMu sync.Mutex
	// assigned is the policy of the next host set installed; set under
	// updateMu.
	assigned assignmentPolicy
	rand     func() uint64
	// firstSet is when the first host set with hosts was installed (see
	// upstream.Host.Created); set under updateMu.
	firstSet time.Time
	// scope is the cluster's stats scope, where load balancers keep
	// their gauges; runtime reads the runtime's snapshot (nil for none).
	scope stats.Scope
	// lbStats are the load balancer's lb_* stats.
	lbStats *lb.Stats
	// local is the proxy's locality (node.locality), nil when unknown.
	local *upstream.Locality
	// zones is the manager's local cluster, nil when there is none or
	// this cluster does not route by zone; isLocal marks the local
	// cluster itself, whose hosts it publishes.
	zones   *zoneSource
	isLocal bool
	runtime func() *runtime.Snapshot

	dial DialFunc
	// ssl are the cluster.<name>.ssl.* stats of a TLS cluster, else nil.
	ssl *tlsconfig.Stats
	// socketCounts count the hosts of each transport socket
	// (socketmatch.go), nil without transport_socket_matches.
	socketCounts socketCounters

	now func() time.Time

	h2 *http.Transport
	// h2x sends the HTTP/2 extended CONNECT streams (upgrades).
	h2x xconnectPool
	// h2SNI are the HTTP/2 pools of requests with their own server name
	// (auto_sni, auto_san_validation) or source (original_src).
	h2SNI *sniPools
	// h2Stats creates the cluster's HTTP/2 codec stats with its first
	// HTTP/2 connection.
	h2Stats func() *h2UpstreamStats
	// h2Opening are the HTTP/2 connections whose stream cap
	// (max_concurrent_streams) is not yet in force.
	h2Opening openingConns
	// readers are the HTTP/1.1 connections' read buffers, readBuffer
	// bytes each; responseReaders those taken once a response is
	// readable (upstream.ReadBuffers), responseBuffer bytes each, the
	// same pool when both sizes are equal.
	readers, responseReaders   sync.Pool
	readBuffer, responseBuffer int
	// keyedPools is set when the cluster's own settings can make an
	// HTTP/1.1 request's pool key other than the default one (an upstream
	// PROXY protocol header, auto_sni or auto_san_validation over TLS):
	// without it, only a request's original_src source can (see h1Key).
	keyedPools bool
	// shares is how many shares of its HTTP/1.1 pools' idle connections
	// the cluster uses (see http1Pool).
	shares uint32

	// conns are the open connections, so that Close can end them all.
	// closed is set under connsMu, so that no connection is tracked after
	// Close has collected them, and read without it where a connection is
	// released or dialled.
	connsMu sync.Mutex
	conns   map[*trackedConn]struct{}
	closed  atomic.Bool
	// retired is set once the cluster is out of service (removed or
	// replaced by discovery): requests that still hold it are served, on
	// connections that close when released (see drain).
	retired atomic.Bool
	// stopped ends the cluster's own work once (see stopBackground).
	stopped sync.Once

	// origDst are an ORIGINAL_DST cluster's hosts, nil for other types.
	origDst *origDstHosts
	// eds is an EDS cluster's warming state, nil for other types.
	eds *edsState
	// dfp are a dynamic_forward_proxy cluster's hosts, nil for other
	// types (dfp.go); subs are its sub-clusters instead, with
	// sub_clusters_config (dfpsub.go).
	dfp  *dfpHosts
	subs *dfpSubClusters
	// lookup finds an active cluster by name (the manager's Cluster):
	// the sub-clusters of a dynamic forward proxy cluster.
	lookup func(string) *Cluster
	// agg is an aggregate cluster's state, nil for other types.
	agg *aggregateState
	// alpn is what auto_config learned the upstream speaks (auto.go).
	alpn autoProtocol
	// dynamic is a discovered cluster's origin, nil for a static one.
	dynamic *dynamicOrigin
	// outlier is the outlier detector, nil without outlier_detection.
	outlier *outlier.Detector
	// hc is the cluster's active health checking, nil for none
	// (healthcheck.go).
	hc *hcState
}

// hostSet is the cluster's hosts at one moment: built whole, then only
// read.
type hostSet struct {
	priorities [][]*upstream.Host
	hosts      []*upstream.Host // priority order, then configuration order
	canaries   map[string]bool  // addresses of canary hosts; nil when none
	// h1 holds the HTTP/1.1 pool of each host (nil for an HTTP/2
	// cluster); byAddr finds hosts for the HTTP/2 transport's dials.
	h1     http1Pools
	byAddr map[string]*upstream.Host
	// policy is the load assignment's policy the set's balancer follows.
	policy assignmentPolicy
	// override finds hosts by address for override picks (overridehost.go).
	override overrideIndex
}

// assignmentPolicy is what of a load assignment's policy the balancer
// reads: a static cluster's from its load_assignment, an EDS cluster's
// from its last assignment (each update replaces it, as in Envoy, where
// the host set carries them).
type assignmentPolicy struct {
	// factor is policy.overprovisioning_factor (percent).
	factor uint32
	// weighted is policy.weighted_priority_health.
	weighted bool
}

// clusterDeps are what the manager hands every cluster.
type clusterDeps struct {
	stats *stats.Store
	// runtime reads the runtime's current snapshot; nil for none.
	runtime func() *runtime.Snapshot
	dial    DialFunc
	// internal opens connections to internal addresses, nil for none.
	internal InternalDialFunc
	now      func() time.Time
	rand     func() uint64
	// outlierEvents is the outlier-detection event log, nil for none.
	outlierEvents *outlier.EventLog
	// local is the proxy's locality, nil when unknown.
	local *upstream.Locality
	// zones is the local cluster (cluster_manager.local_cluster_name),
	// nil for none; localCluster marks the deps of the local cluster
	// itself.
	zones        *zoneSource
	localCluster bool
	log          logr.Logger
	// lookup finds an active cluster by name: the clusters an aggregate
	// cluster lists.
	lookup func(string) *Cluster
	// subs adds and removes the sub-clusters of dynamic forward proxy
	// clusters (the manager), nil outside a manager.
	subs subClusterHost
}

// newCluster builds a cluster from checked settings. A DNS cluster starts
// without hosts.
func newCluster(s *settings, d clusterDeps) *Cluster {
	// The scheme of an absolute-form target under match_upstream.
	s.protocol.h1Format.Secure = s.tls != nil
	scope := d.stats.Scope("cluster." + s.observabilityName + ".")
	// The scope's templates in one block: its traffic stats, the load
	// balancer's, then the cluster's own (see clusterSets).
	blocks := scope.NewBlocks(clusterSet(s.eds != nil))
	c := &Cluster{
		settings: s,
		stats:    upstream.ClusterStatsOf(scope, blocks.Part(setTraffic)),
		res:      newResources(scope, s.name, s.thresholds, s.perHostCx, d.runtime, d.now),
		dial:     d.dial,
		now:      d.now,
		rand:     d.rand,
		scope:    scope,
		runtime:  d.runtime,
		lbStats:  lb.StatsOf(scope, blocks.Part(setLB), s.subsets != nil),
		local:    d.local,
		assigned: assignmentPolicy{factor: s.lb.OverprovisioningFactor, weighted: s.lb.WeightedPriorityHealth},
	}
	extra := c.extra.initFrom(blocks.Part(setExtra))
	c.stats.Tracked = upstream.NewTrackedStats(scope, s.track.timeoutBudgets, s.track.sizes)
	c.setDropOverload(s.drop)
	if d.zones != nil {
		c.isLocal = d.localCluster
		if c.isLocal || s.zoneAware() {
			c.zones = d.zones
		}
	}
	if c.dial == nil {
		c.dial = tcpDialer(s.keepalive, s.bind)
	}
	c.dial = withInternal(c.dial, d.internal)
	if s.tls != nil || s.sockets.anyTLS() {
		c.ssl = tlsconfig.NewStats(scope.Scope("ssl."))
	}
	c.socketCounts = newSocketCounters(scope, &s.sockets)
	if s.protocol.auto && s.tls == nil {
		// Without TLS there is no ALPN to choose by: HTTP/1.1, as in
		// Envoy.
		s.protocol.auto = false
	}
	size, respSize := s.readBufferSize(), s.responseBufferSize()
	c.readBuffer, c.responseBuffer = size, respSize
	c.keyedPools = s.pp != nil || (s.protocol.autoSNI != nil && s.tls != nil)
	c.shares = poolShares()
	c.readers.New = func() any { return bufio.NewReaderSize(nil, size) }
	c.responseReaders.New = func() any { return bufio.NewReaderSize(nil, respSize) }
	if s.protocol.http2 || s.protocol.downstream || s.protocol.auto {
		c.h2 = c.newHTTP2Transport()
		c.h2x = c.newXConnectTransport()
		c.h2SNI = &sniPools{c: c, byKey: map[poolKey]*http.Transport{}}
		c.h2Stats = sync.OnceValue(func() *h2UpstreamStats { return newH2UpstreamStats(scope) })
	}
	if s.origDst != nil {
		c.origDst = newOrigDstHosts(scope)
	}
	priorities := s.priorities
	if s.dns != nil {
		priorities = [][]*upstream.Host{nil}
	}
	if s.eds != nil {
		c.eds = newEDSState(newEDSStats(scope, extra, c.extra.update))
	}
	c.lookup = d.lookup
	switch {
	case s.dfp != nil && s.dfp.sub != nil:
		c.subs = newDFPSubClusters(c, s.dfp.sub, d.subs, d.now)
	case s.dfp != nil:
		c.dfp = &dfpHosts{c: c, cache: s.dfp.cache, byKey: map[string]dfpHost{}}
	}
	if s.aggregate != nil {
		c.agg = &aggregateState{names: s.aggregate.clusters, lookup: d.lookup, panicThreshold: s.lb.PanicThreshold}
	}
	c.outlier = c.newOutlierDetector(scope, d)
	if s.hc != nil {
		c.newHealthChecker(s.hc, scope, d)
	}
	// The initial empty set of a DNS or EDS cluster is no membership
	// change.
	c.install(priorities, s.dns == nil && s.eds == nil)
	if c.zones != nil && s.zoneAware() {
		// Rebuilt when the local cluster's hosts change, from now on.
		c.zones.watch(c)
	}
	if c.dfp != nil {
		// The hosts the cache already has come in at once.
		c.dfp.cache.Subscribe(c.dfp)
	}
	return c
}

// SetHosts replaces the cluster's hosts (a DNS cluster's, as the answers
// change), per priority level. Hosts kept from the previous set keep their
// pools; the idle connections of removed hosts are closed and the others
// close when their request ends, as Envoy drains a removed host.
func (c *Cluster) SetHosts(priorities [][]*upstream.Host) {
	if len(priorities) == 0 {
		priorities = [][]*upstream.Host{nil}
	}
	c.install(priorities, true)
}

// install builds and publishes a host set, then retires the pools of the
// hosts it no longer has. counted says whether the change counts in
// membership_change (a DNS cluster's initial empty set does not).
func (c *Cluster) install(priorities [][]*upstream.Host, counted bool) {
	c.installChange(priorities, counted, nil)
}

// installChange is install with what an EDS update knows of the set it
// replaces (nil for nothing).
func (c *Cluster) installChange(priorities [][]*upstream.Host, counted bool, ch *setChange) {
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	c.installLocked(priorities, counted, ch)
}

// installLocked is installChange with c.updateMu held.
func (c *Cluster) installLocked(priorities [][]*upstream.Host, counted bool, ch *setChange) {
	given := 0
	for _, level := range priorities {
		given += len(level)
	}
	priorities = c.keepHealthyRemoved(priorities)
	old := c.set.Load()
	hs := &hostSet{priorities: priorities, policy: c.assigned}
	if len(priorities) == 1 {
		// One level is the whole set: shared, not copied (levels are
		// never written once built; the full slice expression makes an
		// append copy).
		hs.hosts = priorities[0][:len(priorities[0]):len(priorities[0])]
	} else {
		for _, level := range priorities {
			hs.hosts = append(hs.hosts, level...)
		}
	}
	if ch.appliesTo(old) && !slices.ContainsFunc(ch.gone, isCanary) && !slices.ContainsFunc(ch.added, isCanary) {
		// An EDS change that neither added nor removed a canary keeps
		// the same ones (every other host was old's, and old's other
		// hosts are here): the map is shared, where a pass would read
		// every host.
		hs.canaries = old.canaries
	} else {
		for _, h := range hs.hosts {
			if h.Canary {
				if hs.canaries == nil {
					hs.canaries = map[string]bool{}
				}
				hs.canaries[h.Address] = true
			}
		}
	}
	// The HTTP/2 transport finds hosts by address, HTTP/1.1 requests use
	// a pool per host; a cluster that follows the client's protocol has
	// both.
	if c.h2 != nil {
		hs.byAddr = make(map[string]*upstream.Host, len(hs.hosts))
		for _, h := range hs.hosts {
			if _, dup := hs.byAddr[h.Address]; !dup {
				hs.byAddr[h.Address] = h
			}
		}
	}
	// The change is the whole difference between the sets unless hosts
	// kept for their health joined the update's.
	if ch != nil {
		ch.exact = len(hs.hosts) == given
	}
	// retired are the HTTP/1.1 pools of the hosts that left, when the
	// change tells them (known); otherwise they are found below.
	var retired []*http1Pool
	known := false
	if !c.settings.protocol.http2 {
		if ch.appliesTo(old) && old.h1.many != nil && len(hs.hosts) > maxListedPools {
			// extra: hosts kept for their health joined the update's.
			hs.h1, retired = old.h1.changed(hs.hosts, ch, len(hs.hosts) != given)
			known = true
		} else {
			hs.h1 = newHTTP1Pools(len(hs.hosts))
			for _, h := range hs.hosts {
				if p := old.pool(h); p != nil {
					hs.h1.put(h, p)
				} else {
					hs.h1.put(h, &http1Pool{})
				}
			}
		}
	}
	if c.isLocal {
		c.zones.publish(priorities)
		// The zone-aware clusters route by the new hosts; the local
		// cluster's own balancer is built below.
		defer c.zones.rebuildWatchers(c)
	}
	if c.outlier != nil {
		// Before publishing: every host has its monitor once the data
		// path can pick it.
		c.outlier.SetHosts(hs.hosts)
	}
	c.syncHealthChecks(hs)
	c.set.Store(hs)
	c.storeBalancer(hs, old, ch)
	c.publishMembership(hs, counted)

	if old == nil {
		return
	}
	if c.settings.closeOnSetChange && membershipChanged(old.hosts, hs.hosts) {
		c.drainAllHosts(hs)
	}
	removed := false
	if known {
		for _, p := range retired {
			p.retire()
		}
		removed = len(retired) > 0
	} else {
		for h, p := range old.h1.all() {
			if hs.h1.get(h) == nil {
				p.retire()
				removed = true
			}
		}
	}
	if c.h2 != nil {
		for _, h := range old.hosts {
			if hs.byAddr[h.Address] == nil {
				removed = true
			}
		}
		if removed {
			// The transport cannot close one host's connections: the idle
			// ones of every host go, busy ones finish their streams.
			c.closeIdleHTTP2()
		}
	}
}

// lbConfig is the balancer configuration of a host set being installed
// in place of old (nil for none): the settings' with the cluster's random
// source, lb_* stats, the proxy's locality and, for a zone-aware cluster
// when there is a local cluster, the local cluster's hosts; the set's
// hosts get their creation time, and the cluster's policy its pickers.
func (c *Cluster) lbConfig(hs, old *hostSet, ch *setChange) lb.Config {
	cfg := c.settings.lb
	cfg.OverprovisioningFactor, cfg.WeightedPriorityHealth = hs.policy.factor, hs.policy.weighted
	cfg.Rand = c.rand
	cfg.Stats = c.lbStats
	cfg.Local = c.local
	if c.zones != nil && c.settings.zoneAware() {
		cfg.Zone = &lb.ZoneConfig{
			LocalHosts:     c.zones.localHosts(),
			RoutingEnabled: c.settings.zone.routingEnabled,
			MinClusterSize: c.settings.zone.minClusterSize,
			Runtime:        c.runtime,
			ByWeight:       c.settings.zone.byWeight,

			ForceLocalZoneMinSize: c.settings.zone.forceLocalZone,
		}
	}
	now := c.clock()
	if c.firstSet.IsZero() && len(hs.hosts) > 0 {
		c.firstSet = now
	}
	// An EDS update builds the hosts it changed again: one whose address
	// the previous set had is the same host to Envoy, and keeps its
	// creation time (and so its place in slow start). A few new hosts
	// look theirs up one by one; many, in a map of the previous set.
	// An EDS update's change lists them, the hosts it built: the others
	// were in a set before.
	candidates := hs.hosts
	if ch.appliesTo(old) {
		candidates = ch.added
	}
	fresh := 0
	for _, h := range candidates {
		if h.Created.IsZero() {
			fresh++
		}
	}
	var kept map[string]time.Time
	if fresh > 16 && old != nil {
		kept = make(map[string]time.Time, len(old.hosts))
		for _, o := range old.hosts {
			kept[o.Address] = o.Created
		}
	}
	for _, h := range candidates {
		if !h.Created.IsZero() {
			continue
		}
		c.chooseSocket(h)
		var t time.Time
		if kept != nil {
			t = kept[h.Address]
		} else if old != nil {
			// The last of an address, as the map keeps it.
			for i := len(old.hosts) - 1; i >= 0; i-- {
				if old.hosts[i].Address == h.Address {
					t = old.hosts[i].Created
					break
				}
			}
		}
		if t.IsZero() {
			t = now
		}
		h.Created = t
	}
	p := c.settings.policy
	if p == nil {
		return cfg
	}
	env := lb.Env{Now: now, Clock: c.now, FirstSet: c.firstSet, Rand: c.rand, Stats: &c.scope}
	if c.runtime != nil {
		if snap := c.runtime(); snap != nil {
			env.Runtime = snap
		}
	}
	cfg.NewPicker = p.Pickers(env)
	cfg.HashBased = p.HashBased()
	return cfg
}

// isCanary reports whether h is a canary host.
func isCanary(h *upstream.Host) bool { return h.Canary }

// clock reads the cluster's clock.
func (c *Cluster) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// pool returns h's HTTP/1.1 pool in the set, nil when h is not a member.
func (hs *hostSet) pool(h *upstream.Host) *http1Pool {
	if hs == nil {
		return nil
	}
	return hs.h1.get(h)
}

// publishMembership sets the membership gauges from the hosts' health.
func (c *Cluster) publishMembership(hs *hostSet, counted bool) {
	var healthy, degraded, excluded int64
	var maxWeight uint32
	for _, h := range hs.hosts {
		if h.HealthFlags()&(upstream.PendingActiveHC|upstream.ExcludedViaImmediateHCFail) != 0 {
			// Envoy's excluded hosts.
			excluded++
		}
		switch {
		case !h.Healthy():
		case h.Degraded():
			degraded++
		default:
			healthy++
		}
		maxWeight = max(maxWeight, h.Weight)
	}
	c.stats.MembershipTotal.Set(int64(len(hs.hosts)))
	c.stats.MembershipHealthy.Set(healthy)
	c.stats.MembershipDegraded.Set(degraded)
	c.stats.MembershipExcluded.Set(excluded)
	if counted {
		c.stats.MembershipChange.Inc()
	}
	c.extra.maxHostWeight.Set(int64(maxWeight))
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.settings.name }

// Metadata is the cluster's configured metadata (%CLUSTER_METADATA%), nil
// when it has none. Read-only.
func (c *Cluster) Metadata() *corev3.Metadata { return c.settings.metadata }

// ObservabilityName is the name the cluster's stats and /clusters use:
// alt_stat_name when configured, else the name.
func (c *Cluster) ObservabilityName() string { return c.settings.observabilityName }

// AddedViaAPI reports whether the cluster came from cluster discovery;
// static clusters did not.
func (c *Cluster) AddedViaAPI() bool { return c.dynamic != nil }

// Stats are the cluster's stats (scope "cluster.<observability name>.").
func (c *Cluster) Stats() *upstream.ClusterStats { return c.stats }

// Hosts returns the hosts in priority order, then configuration order,
// the order /clusters lists them in.
func (c *Cluster) Hosts() []*upstream.Host { return slices.Clone(c.set.Load().hosts) }

// IsCanary reports whether the host at address ("ip:port") is a canary.
func (c *Cluster) IsCanary(address string) bool { return c.set.Load().canaries[address] }

// Thresholds returns the circuit-breaker thresholds in force for a
// routing priority (DEFAULT or HIGH; any other reads as DEFAULT): the
// configured ones, overridden by their runtime keys, as Envoy's /clusters
// shows them.
func (c *Cluster) Thresholds(p corev3.RoutingPriority) Thresholds {
	if p != corev3.RoutingPriority_HIGH {
		p = corev3.RoutingPriority_DEFAULT
	}
	t := c.settings.thresholds[p]
	res := &c.res[p]
	t.MaxConnections = clampUint32(res.cx.limit())
	t.MaxPendingRequests = clampUint32(res.pending.limit())
	t.MaxRequests = clampUint32(res.rq.limit())
	t.MaxRetries = clampUint32(res.retryLimit())
	return t
}

// clampUint32 narrows a limit to the thresholds' type.
func clampUint32(n int64) uint32 { return uint32(min(n, math.MaxUint32)) }

// breakers are the circuit breakers of the DEFAULT priority: what the
// TCP proxy's connections, and requests of routes without a priority,
// count against.
func (c *Cluster) breakers() *resources { return &c.res[corev3.RoutingPriority_DEFAULT] }

// breakersOf are the circuit breakers of the HIGH priority when high,
// else the DEFAULT one's.
func (c *Cluster) breakersOf(high bool) *resources {
	if high {
		return &c.res[corev3.RoutingPriority_HIGH]
	}
	return &c.res[corev3.RoutingPriority_DEFAULT]
}

// breakersFor are the circuit breakers of the priority of the request ctx
// carries (upstream.WithHighPriority): a request of a HIGH route, and the
// connections opened for it, count against the HIGH ones, as in Envoy.
func (c *Cluster) breakersFor(ctx context.Context) *resources {
	return c.breakersOf(upstream.HighPriority(ctx))
}

// HTTP2 reports whether requests go upstream over HTTP/2 whatever the
// client spoke.
func (c *Cluster) HTTP2() bool { return c.settings.protocol.http2 }

// HTTP2For reports whether a request from a client that spoke HTTP/2 (or
// not) goes upstream over HTTP/2: always for an HTTP/2 cluster, as the
// client did for one that follows the client's protocol.
func (c *Cluster) HTTP2For(clientHTTP2 bool) bool {
	if c.settings.protocol.auto {
		return c.autoHTTP2()
	}
	return c.settings.protocol.http2 || (c.settings.protocol.downstream && clientHTTP2)
}

// HTTP1Format is how HTTP/1.1 requests to the cluster are written: field
// names in proper case (header_key_format.proper_case_words), the target
// in absolute form (send_fully_qualified_url).
func (c *Cluster) HTTP1Format() *upstream.HTTP1Format { return &c.settings.protocol.h1Format }

// UpstreamFilters is the cluster's upstream HTTP filter chain
// (http_protocol_options.http_filters), nil without one: each attempt on
// the cluster runs it instead of the router's upstream_http_filters.
func (c *Cluster) UpstreamFilters() *httpfilter.UpstreamChain {
	return c.settings.protocol.upstreamFilters
}

// HTTP1Trailers reports whether trailers are carried to and from this
// cluster's HTTP/1.1 upstreams (http_protocol_options.enable_trailers).
func (c *Cluster) HTTP1Trailers() bool { return c.settings.protocol.enableTrailers }

// MaxResponseHeadBytes bounds the head of an HTTP/1.1 response from this
// cluster (common_http_protocol_options.max_response_headers_kb, 80 KiB
// unset, as in Envoy).
func (c *Cluster) MaxResponseHeadBytes() int {
	if n := c.settings.protocol.maxResponseHeadBytes; n > 0 {
		return n
	}
	return defaultMaxResponseHeadersKB << 10
}

// AutoSNI is how requests choose their upstream handshake's server name
// and SAN (upstream_http_protocol_options), nil when they do not: the
// cluster has no upstream TLS, or neither auto_sni nor
// auto_san_validation.
func (c *Cluster) AutoSNI() *upstream.AutoSNI {
	if c.settings.tls == nil {
		return nil
	}
	return c.settings.protocol.autoSNI
}

// MaxStreamDuration is the longest an upstream request may last from the
// moment it has a connection (common_http_protocol_options
// max_stream_duration); 0 for no limit.
func (c *Cluster) MaxStreamDuration() time.Duration { return c.settings.protocol.maxStreamDuration }

// PickHost chooses the host of one request with the cluster's load
// balancer, or returns nil (counted as upstream_cx_none_healthy) when no
// host can take it. An ORIGINAL_DST cluster's host is the one pc points
// at (see origDstTarget); the other clusters ignore pc, which may be nil.
func (c *Cluster) PickHost(pc *upstream.PickContext) *upstream.Host {
	var h *upstream.Host
	if c.agg != nil {
		h = c.pickAggregate(pc)
	} else {
		h = c.pickHost(pc)
	}
	if h == nil {
		c.extraCounter(extraNoneHealthy).Inc()
	}
	return h
}

// pickHost is PickHost without counting a failed pick: an aggregate
// cluster, which picks with the balancers of the clusters it lists,
// counts it as its own.
func (c *Cluster) pickHost(pc *upstream.PickContext) *upstream.Host {
	if c.dfp != nil || c.subs != nil {
		return c.pickDFP(pc)
	}
	if c.origDst != nil {
		dst, ok := c.origDstTarget(pc)
		if !ok {
			return nil
		}
		return c.pickOrigDst(dst)
	}
	if pc != nil && pc.Override.Address != "" {
		// A host asked for by address (stateful sessions) comes before
		// the balancer; a strict request has no other.
		if h := c.pickOverride(pc); h != nil || pc.Override.Strict {
			return h
		}
	}
	if c.settings.hashPolicy != nil && pc != nil {
		pc = c.withLbHashPolicy(pc)
	}
	h, panicked := c.pickOnce(pc)
	if pc != nil && pc.HostReselections > 0 {
		// A retry's host predicates: pick again while they refuse.
		for i := 0; h != nil && i < pc.HostReselections && pc.Rejects(h); i++ {
			h, panicked = c.pickOnce(pc)
		}
	}
	if panicked {
		c.extraCounter(extraLBHealthyPanic).Inc()
	}
	return h
}

// pickOnce asks the cluster's balancer (its subset balancer with
// lb_subset_config) for a host.
func (c *Cluster) pickOnce(pc *upstream.PickContext) (*upstream.Host, bool) {
	if c.settings.subsets != nil {
		return c.subsets.Load().Pick(pc)
	}
	return c.balancer.Load().Pick(pc)
}

// track records an open connection; false once the cluster is closed.
func (c *Cluster) track(tc *trackedConn) bool {
	c.connsMu.Lock()
	defer c.connsMu.Unlock()
	if c.closed.Load() {
		return false
	}
	if c.conns == nil {
		// Made by the first connection: most discovered clusters of a
		// large set never open one.
		c.conns = map[*trackedConn]struct{}{}
	}
	c.conns[tc] = struct{}{}
	return true
}

// untrack forgets a closed connection.
func (c *Cluster) untrack(tc *trackedConn) {
	c.connsMu.Lock()
	delete(c.conns, tc)
	c.connsMu.Unlock()
}

func (c *Cluster) isClosed() bool { return c.closed.Load() }

// Close closes every connection of the cluster, idle or lent, and makes
// later acquisitions fail with ErrClosed. Requests in flight fail.
func (c *Cluster) Close() {
	c.connsMu.Lock()
	if c.closed.Load() {
		c.connsMu.Unlock()
		return
	}
	c.closed.Store(true)
	open := make([]*trackedConn, 0, len(c.conns))
	for tc := range c.conns {
		open = append(open, tc)
	}
	c.connsMu.Unlock()
	c.stopBackground()

	for _, p := range c.set.Load().h1.all() {
		p.closeIdle()
		p.wakeAll()
	}
	if c.h2 != nil {
		c.closeIdleHTTP2()
	}
	for _, tc := range open {
		_ = tc.Close()
	}
}

// stopBackground ends, once, what the cluster does on its own: health
// checks, outlier detection, the original destination hosts' cleanup,
// the dynamic forward proxy's and the local cluster's subscriptions, and
// its tap's registration. Requests can still use the cluster afterwards
// (a drained one, see drain).
func (c *Cluster) stopBackground() {
	c.stopHealthChecks()
	c.stopped.Do(func() {
		if c.settings.tap != nil {
			_ = c.settings.tap.Close()
		}
		if c.origDst != nil {
			c.origDst.stopCleanup()
		}
		if c.dfp != nil {
			c.dfp.cache.Unsubscribe(c.dfp)
		}
		if c.subs != nil {
			c.subs.stop()
		}
		if c.outlier != nil {
			c.outlier.Stop()
		}
		if c.zones != nil {
			c.zones.unwatch(c)
		}
	})
}
