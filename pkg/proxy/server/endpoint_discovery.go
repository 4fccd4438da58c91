package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/cespare/xxhash/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// endpointTypeURL is the type of the load assignments EDS sends.
const endpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

// endpointDiscovery feeds the EDS clusters from the ADS stream, as
// Envoy's EdsClusterImpl: one subscription names every cluster's service,
// each load assignment replaces its clusters' hosts, and a cluster warms
// until its first one arrives (or its initial_fetch_timeout passes). The
// static EDS clusters are there from the start; cluster discovery adds and
// removes others (sync). The last accepted assignment of each service is
// kept, so that a cluster replaced by discovery gets its hosts at once, as
// Envoy's EDS resources cache serves them, instead of warming until the
// management server happens to send that assignment again.
type endpointDiscovery struct {
	s   *Server
	sub *xds.ADSSubscription // nil until a service is wanted

	// mu guards what follows: the stream goroutine changes it (apply,
	// sync), the admin reads it.
	mu       sync.Mutex
	static   []*edsCluster
	clusters []*edsCluster
	// byService finds the clusters of a service name (several clusters
	// may share one).
	byService map[string][]*edsCluster
	// last is the last accepted load assignment of each service.
	last map[string]acceptedAssignment
}

// acceptedAssignment is a load assignment with the version_info of the
// response that brought it.
type acceptedAssignment struct {
	cla     keptAssignment
	version string
}

// edsCluster is one EDS cluster with its subscription stats, which Envoy
// keeps in the cluster's own scope.
type edsCluster struct {
	c       *cluster.Cluster
	service string
	timeout time.Duration
	stats   *cluster.EDSStats
	// api is the eds_config's api_config_source, nil for the ADS
	// stream; stream is then the cluster's own stream, once opened.
	api    *corev3.ApiConfigSource
	stream *adsClient
	// fetchTimer is the initial fetch timeout's, stopped by the first
	// load assignment (it could only find the warming over); d.mu
	// guards it.
	fetchTimer *time.Timer
	// staleTimer is the last assignment's endpoint_stale_after, nil
	// when it has none; staleGen tells a timer that fired from one
	// replaced meanwhile. d.mu guards them.
	staleTimer *time.Timer
	staleGen   uint64

	mu         sync.Mutex
	assignment keptAssignment // the last accepted, none before
	// version and updated are the version_info of the response that
	// brought the assignment, and when it was applied.
	version string
	updated time.Time
}

// newEndpointDiscovery prepares the EDS clusters' subscription on the ADS
// stream; nil when there is no static EDS cluster and no cluster
// discovery that could bring one.
func (s *Server) newEndpointDiscovery(b *bootstrapv3.Bootstrap) (*endpointDiscovery, error) {
	if s.clusters == nil {
		return nil, nil
	}
	eds := s.clusters.EDSClusters()
	if len(eds) == 0 && b.GetDynamicResources().GetCdsConfig() == nil {
		return nil, nil
	}
	d := &endpointDiscovery{s: s, byService: map[string][]*edsCluster{}, last: map[string]acceptedAssignment{}}
	for _, c := range eds {
		var src *corev3.ConfigSource
		for _, cfg := range b.GetStaticResources().GetClusters() {
			if cfg.GetName() == c.Name() {
				src = cfg.GetEdsClusterConfig().GetEdsConfig()
			}
		}
		d.static = append(d.static, s.newEDSCluster(c, src))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.setClustersLocked(slices.Clone(d.static)); err != nil {
		return nil, &bootstrap.FieldError{Path: "static_resources.clusters", Reason: err.Error()}
	}
	return d, nil
}

// newEDSCluster is an EDS cluster's state, with its stats.
func (s *Server) newEDSCluster(c *cluster.Cluster, src *corev3.ConfigSource) *edsCluster {
	service, _ := c.EDSServiceName()
	timeout := xds.DefaultInitialFetchTimeout
	if t := src.GetInitialFetchTimeout(); t != nil {
		timeout = t.AsDuration()
	}
	return &edsCluster{c: c, service: service, timeout: timeout, api: src.GetApiConfigSource(), stats: c.EDSStats()}
}

// setClustersLocked makes cs the EDS clusters and asks for their services:
// subscribing on the first, changing the names later. The names never go
// back to none, which the state-of-the-world protocol would read as a
// wildcard: with no EDS cluster left, the last names stay wanted and their
// assignments are ignored. d.mu is held.
func (d *endpointDiscovery) setClustersLocked(cs []*edsCluster) error {
	for _, ec := range d.clusters {
		if ec.staleTimer != nil && !slices.Contains(cs, ec) {
			ec.staleTimer.Stop()
			ec.staleTimer = nil
		}
		if ec.stream != nil && !slices.Contains(cs, ec) {
			// Closed once d.mu is released: the stream may be applying
			// a response, which takes d.mu.
			go d.s.streams.remove(ec.stream)
		}
	}
	d.clusters = cs
	clear(d.byService)
	var names []string
	var errs []error
	for _, ec := range cs {
		if ec.api != nil {
			errs = append(errs, d.ownStreamLocked(ec))
		} else if !slices.ContainsFunc(d.byService[ec.service], func(o *edsCluster) bool { return o.api == nil }) {
			names = append(names, ec.service)
		}
		d.byService[ec.service] = append(d.byService[ec.service], ec)
	}
	switch {
	case errors.Join(errs...) != nil:
		return errors.Join(errs...)
	case len(names) == 0:
		return nil
	case d.sub != nil:
		d.sub.SetResourceNames(names)
		return nil
	case d.s.ads == nil:
		return d.s.noADS("eds_cluster_config.eds_config.ads")
	}
	// The clusters keep their own stats; the subscription's would only
	// repeat them under a name Envoy does not have.
	sub, err := d.s.ads.Subscribe(xds.SubscriptionOptions{
		TypeURL:       endpointTypeURL,
		Stats:         stats.NewStore().Scope(""),
		ResourceNames: names,
		// Envoy's ConnectionFailure, counted by every EDS cluster.
		OnStreamFailure: func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			for _, ec := range d.clusters {
				ec.stats.Failure.Inc()
				ec.stats.Attempt.Inc()
			}
		},
	}, d.apply(d.s))
	if err != nil {
		return err
	}
	d.sub = sub
	return nil
}

// ownStreamLocked opens an EDS cluster's own stream to its
// api_config_source's endpoint discovery service, asking for its service
// only, as Envoy's EDS subscription with an api_config_source; once.
// d.mu is held.
func (d *endpointDiscovery) ownStreamLocked(ec *edsCluster) error {
	if ec.stream != nil {
		return nil
	}
	c, err := d.s.newGRPCStream(ec.api, endpointTypeURL)
	if err != nil {
		return fieldpath.Prefix(ec.c.Name()+": eds_cluster_config.eds_config.api_config_source.", err)
	}
	if _, err := c.Subscribe(xds.SubscriptionOptions{
		TypeURL:       endpointTypeURL,
		Stats:         stats.NewStore().Scope(""),
		ResourceNames: []string{ec.service},
		OnStreamFailure: func() {
			ec.stats.Failure.Inc()
			ec.stats.Attempt.Inc()
		},
	}, d.apply(d.s)); err != nil {
		_ = c.Close()
		return err
	}
	ec.stream = c
	return d.s.streams.add(c)
}

// sync follows cluster discovery: the discovered EDS clusters (active and
// warming) join the static ones. A new one counts its subscription's
// start, arms its initial fetch timeout, and takes the last assignment of
// its service at once when there is one. It runs on the stream goroutine,
// after each accepted cluster discovery response.
func (d *endpointDiscovery) sync(discovered []*cluster.Cluster) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	known := map[*cluster.Cluster]*edsCluster{}
	for _, ec := range d.clusters {
		known[ec.c] = ec
	}
	cs := slices.Clone(d.static)
	var added []*edsCluster
	for _, c := range discovered {
		if ec := known[c]; ec != nil {
			cs = append(cs, ec)
			continue
		}
		ec := d.s.newEDSCluster(c, c.DiscoveredConfig().GetEdsClusterConfig().GetEdsConfig())
		cs = append(cs, ec)
		added = append(added, ec)
	}
	for _, ec := range added {
		d.arm(ec)
		if last, ok := d.last[ec.service]; ok {
			cla := last.cla.get()
			if priorities, err := ec.c.EDSHosts(cla); err == nil {
				d.install(ec, cla, last.cla, priorities, last.version)
			}
		}
	}
	return d.setClustersLocked(cs)
}

// start arms the static clusters' initial fetch timeouts.
func (d *endpointDiscovery) start() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ec := range d.static {
		d.arm(ec)
	}
}

// arm counts a cluster's subscription start and arms its initial fetch
// timeout: when it passes without a load assignment, the cluster stops
// warming, without hosts, as Envoy's.
func (d *endpointDiscovery) arm(ec *edsCluster) {
	ec.stats.Attempt.Inc() // Envoy counts the subscription's start
	if ec.timeout <= 0 {
		return
	}
	ec.fetchTimer = time.AfterFunc(ec.timeout, func() {
		if ec.c.EndWarming() {
			ec.stats.InitFetchTimeout.Inc()
			ec.stats.Attempt.Inc()
			logging.Warning(d.s.logs.Logger("upstream"), "eds: initial fetch timed out; the cluster starts without endpoints", "cluster", ec.c.Name())
		}
	})
}

// install gives a cluster its hosts from an accepted load assignment.
func (d *endpointDiscovery) install(ec *edsCluster, cla *endpointv3.ClusterLoadAssignment, kept keptAssignment, priorities cluster.EDSHostSet, version string) {
	ec.c.SetEDSHosts(priorities)
	if ec.fetchTimer != nil {
		// Warm now: the timer (and what it holds) can go at once
		// rather than when it fires.
		ec.fetchTimer.Stop()
		ec.fetchTimer = nil
	}
	ec.mu.Lock()
	ec.assignment, ec.version, ec.updated = kept, version, d.s.now()
	ec.mu.Unlock()
	d.armStale(ec, cla)
	st := ec.stats
	st.Success.Inc()
	if len(cla.GetEndpoints()) == 0 {
		st.Empty().Inc()
	}
	st.UpdateTime.Set(d.s.now().UnixMilli())
	st.Version.Set(int64(xxhash.Sum64String(version)))
	st.VersionText.Set(version)
	d.s.logs.Logger("upstream").V(1).Info("eds: hosts updated", "cluster", ec.c.Name(), "version", version)
}

// armStale re-arms a cluster's endpoint_stale_after with each accepted
// assignment, as Envoy's EdsClusterImpl: the previous deadline goes, and
// an assignment with the field sets a new one (counted in
// assignment_timeout_received). d.mu is held.
func (d *endpointDiscovery) armStale(ec *edsCluster, cla *endpointv3.ClusterLoadAssignment) {
	if ec.staleTimer != nil {
		ec.staleTimer.Stop()
		ec.staleTimer = nil
	}
	after := cla.GetPolicy().GetEndpointStaleAfter().AsDuration()
	if after <= 0 {
		return
	}
	ec.stats.AssignmentTimeoutReceived().Inc()
	ec.staleGen++
	gen := ec.staleGen
	ec.staleTimer = time.AfterFunc(after, func() { d.stale(ec, gen) })
}

// stale ends a cluster's assignment whose endpoint_stale_after passed
// without a new one (gen is the deadline's; a later assignment has
// replaced it otherwise): the cluster loses its hosts, as Envoy's, until
// the next assignment, and counts assignment_stale. The service's kept
// assignment goes too, as Envoy's EDS resources cache drops it, so that
// a cluster added later warms for a fresh one.
func (d *endpointDiscovery) stale(ec *edsCluster, gen uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ec.staleTimer == nil || ec.staleGen != gen {
		return
	}
	ec.staleTimer = nil
	ec.c.DropEDSHosts()
	delete(d.last, ec.service)
	ec.mu.Lock()
	ec.assignment, ec.updated = keepAssignment(&endpointv3.ClusterLoadAssignment{ClusterName: ec.service}), d.s.now()
	ec.mu.Unlock()
	ec.stats.AssignmentStale().Inc()
	logging.Warning(d.s.logs.Logger("upstream"), "eds: no load assignment within endpoint_stale_after; the cluster's endpoints are dropped", "cluster", ec.c.Name())
}

// apply returns the subscription's apply function. Every load assignment
// of a response is checked before any applies: a response with one bad
// assignment is rejected whole, and the clusters keep their hosts.
func (d *endpointDiscovery) apply(s *Server) func(xds.Update) error {
	return func(u xds.Update) error {
		s.warnDeprecatedResources(u)
		type change struct {
			ec         *edsCluster
			cla        *endpointv3.ClusterLoadAssignment
			version    string // its own over delta xDS
			priorities cluster.EDSHostSet
		}
		var (
			changes []change
			errs    []error
		)
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, r := range u.Resources {
			cla, ok := r.(*endpointv3.ClusterLoadAssignment)
			if !ok {
				return fmt.Errorf("resources[%d]: not a ClusterLoadAssignment", i)
			}
			if err := bootstrap.ValidateLoadAssignment(cla, d.s.ext); err != nil {
				errs = append(errs, fieldpath.Prefix("resources["+strconv.Itoa(i)+"].", err))
				continue
			}
			for _, ec := range d.byService[cla.GetClusterName()] {
				priorities, err := ec.c.EDSHosts(cla)
				if err != nil {
					errs = append(errs, fieldpath.Prefix("resources["+strconv.Itoa(i)+"].", err))
					continue
				}
				changes = append(changes, change{ec: ec, cla: cla, version: u.VersionOf(i), priorities: priorities})
			}
		}
		for _, ec := range d.clusters {
			ec.stats.Attempt.Inc()
		}
		if err := errors.Join(errs...); err != nil {
			for _, ec := range d.clusters {
				ec.stats.Rejected.Inc()
			}
			return err
		}
		// The assignments are the update's own, decoded for it, and
		// nothing changes them: they are kept as they are, not copied.
		for _, ch := range changes {
			kept := keepAssignment(ch.cla)
			d.last[ch.cla.GetClusterName()] = acceptedAssignment{cla: kept, version: ch.version}
			d.install(ch.ec, ch.cla, kept, ch.priorities, ch.version)
		}
		return nil
	}
}

// assignment returns the last load assignment of the named EDS cluster,
// nil for another cluster or before one arrived.
func (d *endpointDiscovery) assignment(cluster string) *endpointv3.ClusterLoadAssignment {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ec := range d.static {
		if ec.c.Name() == cluster {
			ec.mu.Lock()
			defer ec.mu.Unlock()
			return ec.assignment.get()
		}
	}
	return nil
}

// dynamicDump lists the discovered EDS clusters' hosts for
// /config_dump?include_eds, as Envoy's dynamic_endpoint_configs: each
// cluster's last load assignment, with its version_info and when it was
// applied.
func (d *endpointDiscovery) dynamicDump() []*adminv3.EndpointsConfigDump_DynamicEndpointConfig {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*adminv3.EndpointsConfigDump_DynamicEndpointConfig
	for _, ec := range d.clusters {
		cfg := ec.c.DiscoveredConfig()
		if cfg == nil {
			continue
		}
		ec.mu.Lock()
		kept, version, updated := ec.assignment, ec.version, ec.updated
		ec.mu.Unlock()
		cla := kept.get()
		if cla == nil {
			continue
		}
		cfg = proto.CloneOf(cfg)
		cfg.LoadAssignment = cla
		out = append(out, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{
			VersionInfo:    version,
			EndpointConfig: pack(loadAssignmentDump(cfg)),
			LastUpdated:    timestamppb.New(updated.Truncate(time.Millisecond)),
		})
	}
	return out
}
