package cluster

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// dynamicOrigin is where a discovered cluster came from: its resource as
// received, the version_info of the update that added or changed it, and
// when.
type dynamicOrigin struct {
	config      *clusterv3.Cluster
	version     string
	lastUpdated time.Time
	// discovery is a DNS cluster's resolution, nil for other types.
	discovery *dnscluster.Discovery
	// subOf is the dynamic forward proxy cluster that made this
	// sub-cluster, nil for a cluster discovery brought; serving is
	// closed once the sub-cluster is active (subclusters.go).
	subOf   *Cluster
	serving chan struct{}
}

// dynamicState is the manager's side of cluster discovery. mu serializes
// the updates (and guards what follows it); requests never take it.
type dynamicState struct {
	caches   *dnscache.Manager
	deps     clusterDeps
	env      dns.Env
	resolver dns.Spec
	// transport is what clusters' transport sockets are built with.
	transport transportDeps
	// bind is cluster_manager.upstream_bind_config, nil for none.
	bind  *bindSettings
	scope stats.Scope
	// shared is the server's DNS resolver once a DNS cluster built it.
	shared dns.Resolver

	// apply serializes whole updates, so that the clusters an update
	// finds unchanged at its start (see unchangedDiscovered) are still
	// the warming or active ones when it installs the rest.
	apply sync.Mutex

	mu     sync.Mutex
	closed bool
	// warming are the discovered clusters not yet initialised, by name:
	// requests do not see them until they are (Envoy's cluster warming).
	warming map[string]*Cluster
	// ripeMu guards ripe, the warmed clusters waiting to be promoted
	// together (see ripen). It is taken alone or inside mu, never
	// around it: a cluster ripens under the locks of whoever ends its
	// warming, mu among them.
	ripeMu sync.Mutex
	ripe   []*Cluster
	// draining are the removed or replaced clusters whose connections are
	// still in use.
	draining map[*Cluster]struct{}
}

// DiscoveredCluster is one cluster as /config_dump shows a discovered one.
type DiscoveredCluster struct {
	Config      *clusterv3.Cluster
	Version     string
	LastUpdated time.Time
	Warming     bool
}

// ApplyDiscovered applies one cluster discovery update, the whole set of
// clusters discovery wants, as Envoy's CDS does: every cluster is checked
// first and one bad cluster rejects the update (errors under
// resources[i]); then discovered clusters the update no longer names are
// removed, new names are added and changed clusters replace the old ones.
// An unchanged cluster is left alone, and a static cluster's name cannot
// be taken over (skipped, with a warning). A cluster that needs
// initialising (a DNS cluster's first resolution) warms first and serves
// once warm; until then an older cluster of that name keeps serving.
// Removed and replaced clusters serve the requests that hold them to the
// end: their pools are drained, not cut (see drain). The configurations
// are kept as given (DiscoveredConfig): the caller must not change them
// afterwards.
func (m *Manager) ApplyDiscovered(cfgs []*clusterv3.Cluster, version string, now time.Time) error {
	return m.ApplyDiscoveredEach(cfgs, func(int) string { return version }, now)
}

// ApplyDiscoveredEach is ApplyDiscovered with a version per cluster
// (cfgs[i]'s is versionOf(i)), as delta xDS gives them.
func (m *Manager) ApplyDiscoveredEach(cfgs []*clusterv3.Cluster, versionOf func(i int) string, now time.Time) error {
	return m.ApplyDiscoveredChecked(cfgs, versionOf, now, nil)
}

// ApplyDiscoveredChecked is ApplyDiscoveredEach with check, the caller's
// own check of a cluster (the support tables'), which with the settings
// build runs only for the clusters that differ from the discovered cluster
// of their name (warming, else active): state of the world resends every
// cluster at each change, and an unchanged one was checked and built when
// it arrived. check's errors reject the update before any settings are
// built. A nil check checks nothing more.
func (m *Manager) ApplyDiscoveredChecked(cfgs []*clusterv3.Cluster, versionOf func(i int) string, now time.Time, check func(i int, cfg *clusterv3.Cluster) error) error {
	m.dyn.apply.Lock()
	defer m.dyn.apply.Unlock()
	same := m.unchangedDiscovered(cfgs)
	var errs []error
	if check != nil {
		for i, cfg := range cfgs {
			if same[i] == nil {
				if err := check(i, cfg); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	all := make([]*settings, len(cfgs))
	// Sized once: grown entry by entry, the map of a 10,000-cluster
	// response was rehashed a dozen times.
	seen := make(map[string]int, len(cfgs))
	for i, cfg := range cfgs {
		path := "resources[" + strconv.Itoa(i) + "]"
		var s *settings
		if same[i] != nil {
			s = same[i].settings
		} else {
			var cerrs []error
			s, cerrs = clusterSettings(cfg, m.dyn.transport, m.dyn.bind, m.dyn.caches)
			for _, err := range cerrs {
				errs = append(errs, prefixed(path, err))
			}
		}
		if prev, dup := seen[s.name]; dup {
			errs = append(errs, configErrorf(join(path, "name"), "duplicate cluster name %q (also resources[%d])", s.name, prev))
		}
		seen[s.name] = i
		all[i] = s
	}
	if len(errs) == 0 {
		errs = cycleErrors(all, m.snap.Load().clusters, func(i int) string { return "resources[" + strconv.Itoa(i) + "]" })
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	if m.dyn.closed {
		return errors.New("the cluster manager is shutting down")
	}
	cur := m.snap.Load()
	next := newSnapshotBuilder(len(cur.clusters))
	if len(m.dyn.warming) == 0 {
		// Sized for the clusters that may warm (the changed ones), rather
		// than grown and rehashed entry by entry through a large first
		// response; an empty map left by earlier promotions goes.
		if changed := countNil(same); changed > 0 {
			m.dyn.warming = make(map[string]*Cluster, changed)
		}
	}
	var retired []*Cluster
	for _, c := range cur.clusters {
		if c.dynamic != nil && c.dynamic.subOf == nil {
			// A dynamic forward proxy's sub-clusters are its own, not
			// discovery's (Envoy's avoid_cds_removal).
			if _, wanted := seen[c.Name()]; !wanted {
				m.log.Info("cds: remove cluster", "cluster", c.Name())
				m.dyn.scope.Counter("cluster_removed").Inc()
				retired = append(retired, c)
				continue
			}
		}
		next.put(c)
	}
	for name, w := range m.dyn.warming {
		if _, wanted := seen[name]; !wanted && w.dynamic.subOf == nil {
			m.log.Info("cds: remove warming cluster", "cluster", name)
			if next.snap.byName[name] == nil {
				m.dyn.scope.Counter("cluster_removed").Inc()
			}
			delete(m.dyn.warming, name)
			retired = append(retired, w)
		}
	}
	for i, s := range all {
		old := next.snap.byName[s.name]
		if old != nil && old.dynamic == nil {
			logging.Warning(m.log, "cds: a static cluster cannot be updated by discovery; skipped", "cluster", s.name)
			continue
		}
		pending := m.dyn.warming[s.name]
		switch {
		case same[i] != nil:
			// Still the warming or the active cluster: apply keeps
			// other updates out, and promotion moves the same cluster.
			continue
		case pending != nil && proto.Equal(pending.dynamic.config, cfgs[i]):
			continue
		case pending == nil && old != nil && proto.Equal(old.dynamic.config, cfgs[i]):
			continue
		}
		for _, note := range s.notes {
			logging.Warning(m.log, "cluster setting ignored", "cluster", s.name, "reason", note)
		}
		c := newCluster(s, m.dyn.deps)
		// The configuration is the update's own, decoded for it, and
		// nothing changes it afterwards: it is kept as it is, not copied
		// (a copy was some 800 bytes of every cluster's memory).
		c.dynamic = &dynamicOrigin{config: cfgs[i], version: versionOf(i), lastUpdated: now}
		if old == nil && pending == nil {
			m.log.Info("cds: add cluster", "cluster", s.name)
			m.dyn.scope.Counter("cluster_added").Inc()
		} else {
			m.log.Info("cds: update cluster", "cluster", s.name)
			m.dyn.scope.Counter("cluster_modified").Inc()
		}
		if pending != nil {
			retired = append(retired, pending)
			delete(m.dyn.warming, s.name)
		}
		if s.dns != nil {
			c.dynamic.discovery = m.newDiscovery(c)
			c.hcWaitFor(c.dynamic.discovery.Warmed())
			c.dynamic.discovery.Start()
		}
		c.startHealthChecks()
		if c.origDst != nil {
			c.startOrigDstCleanup()
		}
		c.startOutlier()
		c.startSubClusters()
		if warm := c.warmed(); warm != nil {
			if m.dyn.warming == nil {
				m.dyn.warming = map[string]*Cluster{}
			}
			m.dyn.warming[s.name] = c
			// An EDS cluster waiting for its load assignment only (the
			// common case, thousands per update) ripens when its
			// warming ends, without a goroutine of its own.
			if c.eds == nil || warm != c.eds.warm || !c.eds.whenWarm(func() { m.ripen(c) }) {
				go m.promoteWhenWarm(c, warm)
			}
			continue
		}
		next.put(c)
	}
	m.snap.Store(next.snap)
	m.publishCounts()
	for _, c := range retired {
		m.retireLocked(c)
	}
	return nil
}

// countNil is the number of nil clusters in cs.
func countNil(cs []*Cluster) int {
	n := 0
	for _, c := range cs {
		if c == nil {
			n++
		}
	}
	return n
}

// unchangedDiscovered returns, for each of cfgs, the discovered cluster of
// its name (warming, else active) whose configuration equals it, nil when
// there is none. The caller holds m.dyn.apply.
func (m *Manager) unchangedDiscovered(cfgs []*clusterv3.Cluster) []*Cluster {
	same := make([]*Cluster, len(cfgs))
	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	cur := m.snap.Load()
	for i, cfg := range cfgs {
		c := m.dyn.warming[cfg.GetName()]
		if c == nil {
			c = cur.byName[cfg.GetName()]
		}
		// The discovery decoder hands an unchanged cluster's message
		// back as it was (see xds.resourceReuse): identity settles most
		// of a state-of-the-world update, where proto.Equal's reflective
		// walk of 10,000 clusters took half the update's time.
		if c != nil && c.dynamic != nil && (c.dynamic.config == cfg || proto.Equal(c.dynamic.config, cfg)) {
			same[i] = c
		}
	}
	return same
}

// warmed returns what a discovered cluster waits for before it serves (a
// DNS cluster's first resolution, an EDS cluster's first load assignment,
// the secrets of its TLS context), nil when it is ready at once.
func (c *Cluster) warmed() <-chan struct{} {
	hosts := c.hostsWarmed()
	secrets := c.secretsWarmed()
	switch {
	case hosts == nil:
		return secrets
	case secrets == nil:
		return hosts
	}
	both := make(chan struct{})
	go func() {
		<-hosts
		<-secrets
		close(both)
	}()
	return both
}

// secretsWarmed is what a TLS cluster whose secrets come from discovery
// waits for (their first values, or their initial fetch timeouts), those
// of its transport_socket_matches too, as Envoy's cluster init waits for
// its SDS targets; nil when nothing.
func (c *Cluster) secretsWarmed() <-chan struct{} {
	var waits []<-chan struct{}
	for i := 0; i <= len(c.settings.sockets.list); i++ {
		cl := c.tlsOfSocket(i)
		if cl == nil {
			continue
		}
		ready := cl.Ready()
		select {
		case <-ready:
		default:
			waits = append(waits, ready)
		}
	}
	switch len(waits) {
	case 0:
		return nil
	case 1:
		return waits[0]
	}
	all := make(chan struct{})
	go func() {
		for _, w := range waits {
			<-w
		}
		close(all)
	}()
	return all
}

// hostsWarmed is what a cluster waits for to have its first hosts (see
// warmed), nil when nothing.
func (c *Cluster) hostsWarmed() <-chan struct{} {
	var warm <-chan struct{}
	switch {
	case c.hc != nil:
		// It waits for the hosts too.
		warm = c.hc.warm
	case c.dynamic.discovery != nil:
		warm = c.dynamic.discovery.Warmed()
	case c.eds != nil:
		warm = c.eds.warm
	default:
		return nil
	}
	select {
	case <-warm:
		return nil
	default:
		return warm
	}
}

// promoteWhenWarm makes a warming cluster active once it is initialised
// (see ripen), for the clusters that wait for more than their load
// assignment.
func (m *Manager) promoteWhenWarm(c *Cluster, warm <-chan struct{}) {
	<-warm
	m.ripen(c)
}

// ripen makes a warmed cluster active, unless an update replaced or
// removed it meanwhile. Clusters that warm together (an EDS response
// initialising thousands of clusters at once) are promoted together:
// each joins the batch of ripe clusters, and the first starts the
// goroutine that swaps them all in with one new snapshot, so that n
// clusters warming cost one copy of the snapshot, not n. It takes only
// m.dyn.ripeMu (see EndWarming's callers).
func (m *Manager) ripen(c *Cluster) {
	m.dyn.ripeMu.Lock()
	m.dyn.ripe = append(m.dyn.ripe, c)
	first := len(m.dyn.ripe) == 1
	m.dyn.ripeMu.Unlock()
	if !first {
		return
	}
	go func() {
		// Let the clusters warmed by the same update join the batch.
		runtime.Gosched()
		m.dyn.mu.Lock()
		defer m.dyn.mu.Unlock()
		m.promoteRipeLocked()
	}()
}

// promoteRipeLocked swaps the batch of ripe clusters into the snapshot,
// those still warming (an update may have replaced or removed one since
// it joined), and retires the clusters they replace. m.dyn.mu is held.
func (m *Manager) promoteRipeLocked() {
	m.dyn.ripeMu.Lock()
	ripe := m.dyn.ripe
	m.dyn.ripe = nil
	m.dyn.ripeMu.Unlock()
	if m.dyn.closed {
		return
	}
	cur := m.snap.Load()
	next := newSnapshotBuilder(len(cur.clusters) + len(ripe))
	for _, c := range cur.clusters {
		next.put(c)
	}
	var retired, promoted []*Cluster
	for _, c := range ripe {
		if m.dyn.warming[c.Name()] != c {
			continue
		}
		delete(m.dyn.warming, c.Name())
		if old := next.snap.byName[c.Name()]; old != nil {
			retired = append(retired, old)
		}
		next.put(c)
		promoted = append(promoted, c)
		m.log.Info("cds: warming cluster is active", "cluster", c.Name())
	}
	m.snap.Store(next.snap)
	for _, c := range promoted {
		// Once in the snapshot requests read.
		c.markServing()
	}
	m.publishCounts()
	for _, old := range retired {
		m.retireLocked(old)
	}
}

// snapshotBuilder builds a new cluster snapshot, which nothing reads until
// it is stored; it knows each cluster's position so that replacing one
// costs no search.
type snapshotBuilder struct {
	snap *clusterSnapshot
	pos  map[string]int
}

// newSnapshotBuilder starts an empty snapshot with room for size clusters.
func newSnapshotBuilder(size int) *snapshotBuilder {
	return &snapshotBuilder{
		snap: &clusterSnapshot{clusters: make([]*Cluster, 0, size), byName: make(map[string]*Cluster, size)},
		pos:  make(map[string]int, size),
	}
}

// put makes c the cluster of its name: replacing the one there in place,
// or added last.
func (b *snapshotBuilder) put(c *Cluster) {
	name := c.Name()
	if i, ok := b.pos[name]; ok {
		b.snap.clusters[i] = c
	} else {
		b.pos[name] = len(b.snap.clusters)
		b.snap.clusters = append(b.snap.clusters, c)
	}
	b.snap.byName[name] = c
}

// publishCounts sets the active_clusters and warming_clusters gauges.
// m.dyn.mu is held.
func (m *Manager) publishCounts() {
	m.dyn.scope.Gauge("active_clusters").Set(int64(len(m.snap.Load().clusters)))
	m.dyn.scope.Gauge("warming_clusters").Set(int64(len(m.dyn.warming)))
}

// retireLocked takes a removed or replaced cluster out of service: its
// DNS resolution stops, and its connections drain. m.dyn.mu is held.
func (m *Manager) retireLocked(c *Cluster) {
	if d := c.dynamic.discovery; d != nil {
		go d.Stop() // waits for its goroutines, which may be publishing hosts
	}
	if c.subs != nil {
		// Envoy's dynamic forward proxy cluster removes its sub-clusters
		// when it goes.
		names := c.subs.names()
		c.subs.stop()
		m.removeSubClustersLocked(c, names)
	}
	// A warming EDS cluster stops waiting: its promotion goroutine ends
	// (and finds it gone).
	c.EndWarming()
	if m.dyn.draining == nil {
		m.dyn.draining = map[*Cluster]struct{}{}
	}
	m.dyn.draining[c] = struct{}{}
	go func() {
		c.drain()
		m.dyn.mu.Lock()
		delete(m.dyn.draining, c)
		m.dyn.mu.Unlock()
	}()
}

// Discovered returns the discovered clusters, the active ones then the
// warming ones, for /config_dump.
func (m *Manager) Discovered() []DiscoveredCluster {
	if m == nil {
		return nil
	}
	var out []DiscoveredCluster
	for _, c := range m.snap.Load().clusters {
		if o := c.dynamic; o != nil {
			out = append(out, DiscoveredCluster{Config: o.config, Version: o.version, LastUpdated: o.lastUpdated})
		}
	}
	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	names := make([]string, 0, len(m.dyn.warming))
	for name := range m.dyn.warming {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		o := m.dyn.warming[name].dynamic
		out = append(out, DiscoveredCluster{Config: o.config, Version: o.version, LastUpdated: o.lastUpdated, Warming: true})
	}
	return out
}

// closeDynamic stops the discovered clusters that are not active: the
// warming and draining ones. No update applies afterwards.
func (m *Manager) closeDynamic() {
	m.dyn.mu.Lock()
	m.dyn.closed = true
	var closing []*Cluster
	for _, c := range m.dyn.warming {
		closing = append(closing, c)
	}
	for c := range m.dyn.draining {
		closing = append(closing, c)
	}
	for _, c := range m.snap.Load().clusters {
		if c.dynamic != nil {
			closing = append(closing, c)
		}
	}
	m.dyn.mu.Unlock()
	for _, c := range closing {
		if d := c.dynamic.discovery; d != nil {
			d.Stop()
		}
		c.Close()
	}
}

// DiscoveredWarmed is closed once the discovered clusters warming now have
// ended their warming (or the manager closed): the server waits for the
// clusters of the first discovery response before it asks for listeners.
func (m *Manager) DiscoveredWarmed() <-chan struct{} {
	done := make(chan struct{})
	m.dyn.mu.Lock()
	var waits []<-chan struct{}
	for _, c := range m.dyn.warming {
		if w := c.warmed(); w != nil {
			waits = append(waits, w)
		}
	}
	m.dyn.mu.Unlock()
	go func() {
		defer close(done)
		for _, w := range waits {
			<-w
		}
		// A cluster that ended warming is promoted by its own goroutine:
		// wait for that too, so that the listeners asked for next find it.
		for {
			m.dyn.mu.Lock()
			n := 0
			for _, c := range m.dyn.warming {
				if c.warmed() == nil {
					n++
				}
			}
			closed := m.dyn.closed
			m.dyn.mu.Unlock()
			if n == 0 || closed {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return done
}

// DiscoveredEDS returns the discovered EDS clusters, active and warming,
// whose load assignments the server asks for.
func (m *Manager) DiscoveredEDS() []*Cluster {
	var out []*Cluster
	for _, c := range m.snap.Load().clusters {
		if c.dynamic != nil && c.eds != nil {
			out = append(out, c)
		}
	}
	m.dyn.mu.Lock()
	defer m.dyn.mu.Unlock()
	for _, c := range m.dyn.warming {
		if c.eds != nil {
			out = append(out, c)
		}
	}
	return out
}

// DiscoveredConfig returns a discovered cluster's resource as received,
// nil for a static cluster. Read-only.
func (c *Cluster) DiscoveredConfig() *clusterv3.Cluster {
	if c.dynamic == nil {
		return nil
	}
	return c.dynamic.config
}
