package cluster

import (
	"errors"
	"math/rand/v2"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
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
	// Extensions are the server's extensions: the DNS resolver
	// extensions a cluster's typed_dns_resolver_config may name.
	Extensions *extension.Registry
	// Resolver is the server's DNS resolver configuration (the
	// bootstrap's), used by DNS clusters without one of their own; nil
	// means the c-ares resolver with its defaults.
	Resolver dns.Spec
	// ResolverEnv is what resolvers are built with (their Stats and Log
	// default to the manager's).
	ResolverEnv dns.Env
	// Secrets resolves the secrets TLS transport sockets name; nil
	// refuses every reference.
	Secrets tlsconfig.SecretResolver
	// Log is the "upstream" component logger; DNS resolvers log to
	// ResolverEnv.Log.
	Log logr.Logger
	// Runtime returns the runtime's current snapshot, whose
	// circuit_breakers.<cluster>.<priority>.max_* keys override the
	// clusters' thresholds; nil for no runtime.
	Runtime func() *runtime.Snapshot
}

// Manager owns the clusters. The set of clusters is fixed once built (the
// bootstrap's), so lookups take no lock; DNS clusters' hosts change as
// their discoveries publish answers.
type Manager struct {
	clusters    []*Cluster
	byName      map[string]*Cluster
	discoveries []*dnscluster.Discovery
	log         logr.Logger
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
	seen := map[string]int{}
	for i, cfg := range cfgs {
		path := index(staticClustersPath, i)
		s, cerrs := buildSettings(cfg, o.Extensions)
		var terrs []error
		s.tls, terrs = buildTransport(cfg.GetTransportSocket(), o.Extensions, o.Secrets)
		cerrs = append(cerrs, terrs...)
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
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	m := &Manager{byName: make(map[string]*Cluster, len(all)), log: o.Log}
	d := clusterDeps{stats: o.Stats, runtime: o.Runtime, dial: o.Dial, now: o.Now, rand: o.Rand}
	env := o.ResolverEnv
	if env.Stats == nil {
		env.Stats = o.Stats
	}
	if env.Log.GetSink() == nil {
		env.Log = logr.Discard()
	}
	// The server's resolver is built once, for the first DNS cluster
	// that uses it, and shared.
	var shared dns.Resolver
	for _, s := range all {
		for _, note := range s.notes {
			logging.Warning(o.Log, "cluster setting ignored", "cluster", s.name, "reason", note)
		}
		c := newCluster(s, d)
		m.clusters = append(m.clusters, c)
		m.byName[s.name] = c
		if s.dns == nil {
			continue
		}
		var r dns.Resolver
		switch {
		case s.dns.resolver != nil:
			r = s.dns.resolver.New(env)
		case shared != nil:
			r = shared
		default:
			spec := o.Resolver
			if spec == nil {
				spec = dns.CaresSpec(dns.CaresOptions{})
			}
			shared = spec.New(env)
			r = shared
		}
		m.discoveries = append(m.discoveries, dnscluster.New(s.name, s.dns.cfg, r, c.extra.update, c.SetHosts, o.Log, o.Rand))
	}
	m.publishStats(o.Stats.Scope("cluster_manager."))
	return m, nil
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
	for _, c := range m.clusters {
		if c.origDst != nil {
			c.startOrigDstCleanup()
		}
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
		for _, c := range m.clusters {
			if c.eds != nil {
				<-c.eds.warm
			}
		}
	}()
	return done
}

// publishStats creates Envoy's cluster_manager.* stats. Static clusters
// are added once, at start-up, and are active at once: no cluster warms.
func (m *Manager) publishStats(scope stats.Scope) {
	scope.Counter("cluster_added").Add(uint64(len(m.clusters)))
	scope.Counter("cluster_modified")
	scope.Counter("cluster_removed")
	scope.Counter("cluster_updated")
	scope.Counter("cluster_updated_via_merge")
	scope.Counter("update_merge_cancelled")
	scope.Counter("update_out_of_merge_window")
	scope.Gauge("active_clusters").Set(int64(len(m.clusters)))
	scope.Gauge("warming_clusters").Set(0)
}

// Cluster returns the named cluster, or nil.
func (m *Manager) Cluster(name string) *Cluster { return m.byName[name] }

// Clusters returns every cluster in configuration order.
func (m *Manager) Clusters() []*Cluster {
	return append([]*Cluster(nil), m.clusters...)
}

// Close stops the DNS resolutions and closes every cluster's connections.
// A nil manager has none.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	for _, d := range m.discoveries {
		d.Stop()
	}
	for _, c := range m.clusters {
		c.Close()
	}
}
