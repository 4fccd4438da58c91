package cluster

import (
	"errors"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
)

// The manager adds and removes the sub-clusters of dynamic forward proxy
// clusters (dfpsub.go).
var _ subClusterHost = (*Manager)(nil)

// probeSubCluster is the host a dynamic forward proxy cluster's
// sub-cluster configuration is checked with when the cluster is built.
const probeSubCluster = "sub-cluster.invalid"

// checkSubClusters checks, once, what every sub-cluster of a dynamic
// forward proxy cluster with sub_clusters_config will be built from (its
// own configuration as a STRICT_DNS cluster), so that a sub-cluster is
// never refused at a request's time for a setting of its parent. Errors
// are relative to the parent.
func (s *settings) checkSubClusters(td transportDeps, defaultBind *bindSettings, caches *dnscache.Manager) []error {
	// The DNS settings the parent carries are its sub-clusters': not
	// ignored, as on a cluster that follows a DNS cache.
	ignored := ignoredDNSFields(s.dfp.source)
	s.notes = slices.DeleteFunc(s.notes, func(n string) bool { return slices.Contains(ignored, n) })
	name := SubClusterName(probeSubCluster, 80)
	cfg := subClusterConfig(s.dfp.source, s.dfp.sub, s.dfp.autoSNI, name, probeSubCluster, 80)
	probe, errs := clusterSettings(cfg, td, defaultBind, caches)
	closeTaps([]*settings{probe})
	kind := "STRICT_DNS"
	if s.dfp.sub.dnsCluster != nil {
		kind = "DNS cluster (dns_cluster_config)"
	}
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		out = append(out, configErrorf(dfpTypeConfig+".sub_clusters_config", "its sub-clusters (%s copies of the cluster) would be refused: %v", kind, err))
	}
	return out
}

// addSubCluster builds and starts the sub-cluster cfg of parent, as
// Envoy's cluster manager adds one (addOrUpdateCluster): a new cluster of
// that name, or one replacing a sub-cluster of the same name, warms until
// its first resolution ends; ready is closed once it serves. Cluster
// discovery never removes it (Envoy's avoid_cds_removal); its parent does.
func (m *Manager) addSubCluster(parent *Cluster, cfg *clusterv3.Cluster, ready chan struct{}) error {
	m.dyn.apply.Lock()
	defer m.dyn.apply.Unlock()
	s, errs := clusterSettings(cfg, m.dyn.transport, m.dyn.bind, m.dyn.caches)
	if err := errors.Join(errs...); err != nil {
		closeTaps([]*settings{s})
		m.log.Info("dynamic forward proxy: sub-cluster refused", "cluster", cfg.GetName(), "error", err.Error())
		return err
	}
	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	if m.dyn.closed {
		closeTaps([]*settings{s})
		return errors.New("the cluster manager is shutting down")
	}
	if m.retiring(parent) {
		closeTaps([]*settings{s})
		return errors.New("the dynamic forward proxy cluster was removed")
	}
	cur := m.snap.Load()
	old, pending := cur.byName[s.name], m.dyn.warming[s.name]
	if old != nil && old.dynamic == nil {
		closeTaps([]*settings{s})
		return errors.New("a static cluster has the sub-cluster's name " + s.name)
	}
	c := newCluster(s, m.dyn.deps)
	c.dynamic = &dynamicOrigin{config: cfg, lastUpdated: m.dyn.deps.now(), subOf: parent, serving: ready}
	if old == nil && pending == nil {
		m.log.Info("dynamic forward proxy: add sub-cluster", "cluster", s.name)
		m.dyn.scope.Counter("cluster_added").Inc()
	} else {
		m.log.Info("dynamic forward proxy: update sub-cluster", "cluster", s.name)
		m.dyn.scope.Counter("cluster_modified").Inc()
	}
	if pending != nil {
		delete(m.dyn.warming, s.name)
		m.retireLocked(pending)
	}
	if s.dns != nil {
		c.dynamic.discovery = m.newDiscovery(c)
		c.hcWaitFor(c.dynamic.discovery.Warmed())
		c.dynamic.discovery.Start()
	}
	c.startHealthChecks()
	c.startOutlier()
	if warm := c.warmed(); warm != nil {
		if m.dyn.warming == nil {
			m.dyn.warming = map[string]*Cluster{}
		}
		m.dyn.warming[s.name] = c
		m.publishCounts()
		go m.promoteWhenWarm(c, warm)
		return nil
	}
	next := newSnapshotBuilder(len(cur.clusters) + 1)
	for _, o := range cur.clusters {
		next.put(o)
	}
	next.put(c)
	m.snap.Store(next.snap)
	c.markServing()
	m.publishCounts()
	if old != nil {
		m.retireLocked(old)
	}
	return nil
}

// retiring reports whether parent is no longer the active or warming
// cluster of its name. m.dyn.mu is held.
func (m *Manager) retiring(parent *Cluster) bool {
	return m.snap.Load().byName[parent.Name()] != parent && m.dyn.warming[parent.Name()] != parent
}

// removeSubCluster removes parent's sub-cluster name, warming or active,
// as Envoy's cluster manager removes one (cluster_removed); its
// connections drain.
func (m *Manager) removeSubCluster(parent *Cluster, name string) {
	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	m.removeSubClustersLocked(parent, []string{name})
}

// removeSubClustersLocked removes the named sub-clusters of parent (those
// another parent took over are left alone). m.dyn.mu is held.
func (m *Manager) removeSubClustersLocked(parent *Cluster, names []string) {
	if m.dyn.closed || len(names) == 0 {
		return
	}
	var retired []*Cluster
	for _, name := range names {
		if w := m.dyn.warming[name]; w != nil && w.dynamic.subOf == parent {
			delete(m.dyn.warming, name)
			retired = append(retired, w)
		}
	}
	cur := m.snap.Load()
	gone := map[*Cluster]bool{}
	for _, name := range names {
		if c := cur.byName[name]; c != nil && c.dynamic != nil && c.dynamic.subOf == parent {
			gone[c] = true
		}
	}
	if len(gone) > 0 {
		next := newSnapshotBuilder(len(cur.clusters))
		for _, c := range cur.clusters {
			if gone[c] {
				retired = append(retired, c)
				continue
			}
			next.put(c)
		}
		m.snap.Store(next.snap)
	}
	for _, c := range retired {
		m.log.Info("dynamic forward proxy: remove sub-cluster", "cluster", c.Name())
		m.dyn.scope.Counter("cluster_removed").Inc()
		m.retireLocked(c)
	}
	m.publishCounts()
}

// markServing closes a sub-cluster's ready channel once it is active.
// m.dyn.mu is held (every caller promotes under it), so it closes once.
func (c *Cluster) markServing() {
	if c.dynamic == nil || c.dynamic.serving == nil {
		return
	}
	select {
	case <-c.dynamic.serving:
	default:
		close(c.dynamic.serving)
	}
}

// startSubClusters arms the idle timer of a dynamic forward proxy cluster
// with sub-clusters.
func (c *Cluster) startSubClusters() {
	if c.subs != nil {
		c.subs.start()
	}
}
