package cluster

import (
	"errors"
	"math/rand/v2"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
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
}

// Manager owns the clusters. The set is fixed once built (static
// clusters), so lookups take no lock.
type Manager struct {
	clusters []*Cluster
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
	if o.Dial == nil {
		o.Dial = dialTCP
	}
	var (
		errs []error
		all  []*settings
	)
	seen := map[string]int{}
	for i, cfg := range cfgs {
		path := index(staticClustersPath, i)
		s, cerrs := buildSettings(cfg)
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

	m := &Manager{byName: make(map[string]*Cluster, len(all))}
	d := clusterDeps{stats: o.Stats, dial: o.Dial, now: o.Now, rand: o.Rand}
	for _, s := range all {
		c := newCluster(s, d)
		m.clusters = append(m.clusters, c)
		m.byName[s.name] = c
	}
	m.publishStats(o.Stats.Scope("cluster_manager."))
	return m, nil
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

// Close closes every cluster's connections. A nil manager has none.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	for _, c := range m.clusters {
		c.Close()
	}
}
