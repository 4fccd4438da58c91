package cluster

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// staticClustersPath is where the manager's clusters sit in the bootstrap;
// configuration errors are reported under it.
const staticClustersPath = "static_resources.clusters"

// Options are what the manager needs from the server.
type Options struct {
	// Stats is the server's stat store (required).
	Stats *stats.Store
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand seeds the load balancers and chooses priority levels; nil
	// means math/rand/v2.
	Rand func() uint64
	// Dial opens upstream connections; nil dials TCP.
	Dial DialFunc
	// Internal opens the connections to envoy_internal_address endpoints
	// (the server's internal listeners); nil fails them.
	Internal InternalDialFunc
	// Extensions are the server's extensions: the DNS resolver
	// extensions a cluster's typed_dns_resolver_config may name, and the
	// load-balancing policies of its load_balancing_policy.
	Extensions *extension.Registry
	// Resolver is the server's DNS resolver configuration (the
	// bootstrap's), used by DNS clusters without one of their own; nil
	// means the c-ares resolver with its defaults.
	Resolver dns.Spec
	// ResolverUntyped is set when the bootstrap's resolver does not come
	// from a typed_dns_resolver_config with a typed_config: DNS caches
	// without resolver settings then use c-ares of their own (with their
	// deprecated use_tcp_for_dns_lookups), not Resolver, as in Envoy.
	ResolverUntyped bool
	// ResolverEnv is what resolvers are built with (their Stats and Log
	// default to the manager's).
	ResolverEnv dns.Env
	// Secrets resolves the secrets TLS transport sockets name; nil
	// refuses every reference.
	Secrets tlsconfig.SecretResolver
	// KeyLog opens the files of TLS contexts' key_log; nil refuses
	// key_log.
	KeyLog tlsconfig.KeyLogOpener
	// Log is the "upstream" component logger; DNS resolvers log to
	// ResolverEnv.Log.
	Log logr.Logger
	// Runtime returns the runtime's current snapshot, whose
	// circuit_breakers.<cluster>.<priority>.max_* keys override the
	// clusters' thresholds; nil for no runtime.
	Runtime func() *runtime.Snapshot
	// OutlierEvents is the bootstrap's outlier-detection event log
	// (cluster_manager.outlier_detection.event_log_path), nil for none.
	OutlierEvents *outlier.EventLog
	// Locality is the proxy's own locality (the bootstrap's
	// node.locality), nil when not configured.
	Locality *upstream.Locality
	// LocalClusterName is cluster_manager.local_cluster_name: the static
	// cluster whose hosts are the proxies of this service, which
	// zone-aware routing compares the upstream clusters with; "" for
	// none.
	LocalClusterName string
	// DefaultBind is cluster_manager.upstream_bind_config: the bind
	// configuration of every cluster without its own; nil for none.
	DefaultBind *corev3.BindConfig
	// Taps is where tap transport sockets with admin_config register
	// (the server's /tap registry); nil refuses them.
	Taps *tap.Registry
}

// closeTaps releases the admin config ids of the tap transport sockets of
// clusters that will not run.
func closeTaps(all []*settings) {
	for _, s := range all {
		if s != nil && s.tap != nil {
			_ = s.tap.Close()
		}
	}
}

// localClusterPath is where the local cluster is named in the bootstrap.
const localClusterPath = "cluster_manager.local_cluster_name"

// Manager owns the clusters: the bootstrap's, and those cluster discovery
// adds (see dynamic.go). Requests find clusters in an immutable snapshot
// read with one atomic load, never a lock; a change builds a new snapshot
// and swaps it in. DNS clusters' hosts change as their discoveries publish
// answers.
type Manager struct {
	snap atomic.Pointer[clusterSnapshot]
	// discoveries are the static DNS clusters' resolutions.
	discoveries []*dnscluster.Discovery
	log         logr.Logger
	// dyn is what building and replacing discovered clusters needs.
	dyn dynamicState
	// caches are the dynamic forward proxy's DNS caches, shared by name
	// between the dynamic_forward_proxy clusters and filters.
	caches *dnscache.Manager
}

// clusterSnapshot is the set of active clusters at one moment: built
// whole, then only read.
type clusterSnapshot struct {
	clusters []*Cluster // static ones in configuration order, then discovered ones
	byName   map[string]*Cluster
}

// NewManager builds the static clusters of the bootstrap. Every problem is
// reported, each with its path under static_resources.clusters, and then
// no cluster is built.
func NewManager(cfgs []*clusterv3.Cluster, o Options) (*Manager, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Uint64
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	var (
		errs []error
		all  []*settings
	)
	defaultBind, berrs := buildBind(o.DefaultBind)
	for _, err := range berrs {
		// buildBind's paths start at upstream_bind_config.
		errs = append(errs, prefixed("cluster_manager", err))
	}
	caches := newDNSCaches(o)
	td := transportDeps{ext: o.Extensions, secrets: o.Secrets, keyLog: o.KeyLog, taps: o.Taps, stats: o.Stats, runtime: o.Runtime}
	seen := map[string]int{}
	for i, cfg := range cfgs {
		path := index(staticClustersPath, i)
		s, cerrs := clusterSettings(cfg, td, defaultBind, caches)
		for _, err := range cerrs {
			errs = append(errs, prefixed(path, err))
		}
		if prev, dup := seen[s.name]; dup && s.name != "" {
			errs = append(errs, configErrorf(join(path, "name"), "duplicate cluster name %q (also %s)", s.name, index(staticClustersPath, prev)))
		} else {
			seen[s.name] = i
		}
		all = append(all, s)
	}
	errs = append(errs, cycleErrors(all, nil, func(i int) string { return index(staticClustersPath, i) })...)
	if name := o.LocalClusterName; name != "" {
		if _, ok := seen[name]; !ok {
			// Envoy's check: the local cluster is a static one.
			errs = append(errs, configErrorf(localClusterPath, "local cluster %q must be defined in static_resources.clusters", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeTaps(all)
		return nil, err
	}

	m := &Manager{log: o.Log, caches: caches}
	snap := &clusterSnapshot{byName: make(map[string]*Cluster, len(all))}
	d := clusterDeps{stats: o.Stats, runtime: o.Runtime, dial: o.Dial, internal: o.Internal, now: o.Now, rand: o.Rand, local: o.Locality, outlierEvents: o.OutlierEvents, log: o.Log, lookup: m.Cluster, subs: m}
	if o.LocalClusterName != "" {
		d.zones = newZoneSource(o.LocalClusterName)
	}
	env := o.ResolverEnv
	if env.Stats == nil {
		env.Stats = o.Stats
	}
	if env.Log.GetSink() == nil {
		env.Log = logr.Discard()
	}
	m.dyn = dynamicState{caches: caches, deps: d, env: env, resolver: o.Resolver, transport: td, bind: defaultBind, scope: o.Stats.Scope("cluster_manager.")}
	for _, s := range all {
		for _, note := range s.notes {
			logging.Warning(o.Log, "cluster setting ignored", "cluster", s.name, "reason", note)
		}
		if dl := o.Log.V(1); dl.Enabled() {
			// Envoy's cluster manager debug record of each static cluster.
			dl.Info("cm init: adding: cluster=" + s.name)
		}
		cd := d
		cd.localCluster = d.zones != nil && s.name == d.zones.name
		c := newCluster(s, cd)
		snap.clusters = append(snap.clusters, c)
		snap.byName[s.name] = c
		if s.dns == nil {
			continue
		}
		d := m.newDiscovery(c)
		c.hcWaitFor(d.Warmed())
		m.discoveries = append(m.discoveries, d)
	}
	m.snap.Store(snap)
	m.publishStats(o.Stats.Scope("cluster_manager."))
	return m, nil
}

// clusterSettings checks one cluster's configuration and builds its
// settings: the one path of the bootstrap's clusters and of those cluster
// discovery brings (ApplyDiscovered), so that whatever a cluster's
// configuration holds is applied, or refused, alike for both.
//
// defaultBind is cluster_manager.upstream_bind_config, which a cluster
// without its own upstream_bind_config binds by, as in Envoy; nil for
// none.
//
// caches are the DNS caches a dynamic_forward_proxy cluster finds its
// cache among.
func clusterSettings(cfg *clusterv3.Cluster, td transportDeps, defaultBind *bindSettings, caches *dnscache.Manager) (*settings, []error) {
	s, errs := buildSettings(cfg, td.ext)
	if s.bind == nil && cfg.GetUpstreamBindConfig() == nil {
		s.bind = defaultBind
	}
	td.cluster = s.observabilityName
	t, terrs := buildTransport(cfg.GetTransportSocket(), td, "cluster."+s.observabilityName+".")
	s.tls, s.tap, s.pp, s.iu, s.h11, s.tcpStats = t.tls, t.tap, t.pp, t.iu, t.h11, t.tcpStats
	errs = append(errs, terrs...)
	var merrs []error
	s.sockets, merrs = buildSocketMatches(cfg, td, "cluster."+s.observabilityName+".", t)
	errs = append(errs, merrs...)
	switch {
	case s.dfp != nil && s.dfp.sub != nil:
		errs = append(errs, s.checkSubClusters(td, defaultBind, caches)...)
	case s.dfp != nil:
		errs = append(errs, s.attachDNSCache(caches)...)
	}
	return s, errs
}

// newDiscovery prepares a DNS cluster's resolution, with its own resolver
// or the server's, which is built once, for the first DNS cluster that
// uses it, and shared.
func (m *Manager) newDiscovery(c *Cluster) *dnscluster.Discovery {
	s := c.settings
	var r dns.Resolver
	switch {
	case s.dns.resolver != nil:
		r = s.dns.resolver.New(m.dyn.env)
	case m.dyn.shared != nil:
		r = m.dyn.shared
	default:
		spec := m.dyn.resolver
		if spec == nil {
			spec = dns.CaresSpec(dns.CaresOptions{})
		}
		m.dyn.shared = spec.New(m.dyn.env)
		r = m.dyn.shared
	}
	return dnscluster.New(s.name, s.dns.cfg, r, c.extra.update, c.SetHosts, m.log, m.dyn.deps.rand)
}

// Start begins resolving the DNS clusters' names, each on goroutines of
// its own. Nothing is resolved before (--mode validate builds a manager
// and never starts it).
func (m *Manager) Start() {
	if m == nil {
		return
	}
	for _, d := range m.discoveries {
		d.Start()
	}
	m.caches.Start()
	for _, c := range m.snap.Load().clusters {
		if c.origDst != nil {
			c.startOrigDstCleanup()
		}
		c.startOutlier()
		c.startHealthChecks()
		c.startSubClusters()
	}
}

// Warmed is closed once every cluster is initialised: a DNS cluster once
// the first resolution of one of its names has ended (unless
// wait_for_warm_on_init is false), an EDS cluster once its first load
// assignment is in (or its initial fetch timed out), as Envoy's cluster
// manager waits for its clusters before the server goes on.
func (m *Manager) Warmed() <-chan struct{} {
	done := make(chan struct{})
	if m == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		for _, d := range m.discoveries {
			<-d.Warmed()
		}
		for _, c := range m.snap.Load().clusters {
			if c.eds != nil && !c.AddedViaAPI() {
				<-c.eds.warm
			}
		}
		// A TLS cluster whose secrets come from discovery waits for them.
		for _, c := range m.snap.Load().clusters {
			if w := c.secretsWarmed(); w != nil && !c.AddedViaAPI() {
				<-w
			}
		}
		// A cluster with health checks initializes once each of its
		// first hosts had its first check, as in Envoy.
		for _, c := range m.snap.Load().clusters {
			if w := c.healthWarm(); w != nil && !c.AddedViaAPI() {
				<-w
			}
		}
	}()
	return done
}

// publishStats creates Envoy's cluster_manager.* stats. Static clusters
// are added once, at start-up, and are active at once: no cluster warms.
func (m *Manager) publishStats(scope stats.Scope) {
	n := len(m.snap.Load().clusters)
	scope.Counter("cluster_added").Add(uint64(n))
	scope.Counter("cluster_modified")
	scope.Counter("cluster_removed")
	scope.Counter("cluster_updated")
	scope.Counter("cluster_updated_via_merge")
	scope.Counter("update_merge_cancelled")
	scope.Counter("update_out_of_merge_window")
	scope.Gauge("active_clusters").Set(int64(n))
	scope.Gauge("warming_clusters").Set(0)
}

// Cluster returns the named active cluster, or nil: one atomic load and a
// map lookup, the request path's only access to the manager.
func (m *Manager) Cluster(name string) *Cluster { return m.snap.Load().byName[name] }

// Clusters returns every active cluster: the static ones in configuration
// order, then the discovered ones.
func (m *Manager) Clusters() []*Cluster {
	return append([]*Cluster(nil), m.snap.Load().clusters...)
}

// Close stops the DNS resolutions and closes every cluster's connections,
// the discovered ones (warming and draining ones among them) too. A nil
// manager has none.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	for _, d := range m.discoveries {
		d.Stop()
	}
	m.caches.Close()
	m.closeDynamic()
	for _, c := range m.snap.Load().clusters {
		c.Close()
	}
}
