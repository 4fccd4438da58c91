package server

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/cespare/xxhash/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// endpointTypeURL is the type of the load assignments EDS sends.
const endpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

// endpointDiscovery feeds the static EDS clusters from the ADS stream, as
// Envoy's EdsClusterImpl: one subscription names every cluster's service,
// each load assignment replaces its clusters' hosts, and a cluster warms
// until its first one arrives (or its initial_fetch_timeout passes).
type endpointDiscovery struct {
	clusters []*edsCluster
	// byService finds the clusters of a service name (several clusters
	// may share one).
	byService map[string][]*edsCluster
}

// edsCluster is one EDS cluster with its subscription stats, which Envoy
// keeps in the cluster's own scope.
type edsCluster struct {
	c       *cluster.Cluster
	service string
	timeout time.Duration
	stats   edsStats

	mu         sync.Mutex
	assignment *endpointv3.ClusterLoadAssignment // the last accepted, nil before
}

// edsStats are the subscription stats of an EDS cluster, under
// cluster.<name>., with Envoy's names (update_attempt, update_success,
// update_empty and version are also cluster stats, and are the same).
type edsStats struct {
	attempt, success, failure, rejected, empty, initFetchTimeout *stats.Counter
	version, updateTime                                          *stats.Gauge
	versionText                                                  *stats.TextReadout
}

// newEndpointDiscovery subscribes the EDS clusters' services on the ADS
// stream; nil when there is no EDS cluster.
func (s *Server) newEndpointDiscovery(b *bootstrapv3.Bootstrap) (*endpointDiscovery, error) {
	if s.clusters == nil || s.ads == nil {
		return nil, nil // the bootstrap check requires ads_config; a build error is reported already
	}
	eds := s.clusters.EDSClusters()
	if len(eds) == 0 {
		return nil, nil
	}
	d := &endpointDiscovery{byService: map[string][]*edsCluster{}}
	var names []string
	for _, c := range eds {
		service, _ := c.EDSServiceName()
		timeout := xds.DefaultInitialFetchTimeout
		for _, cfg := range b.GetStaticResources().GetClusters() {
			if cfg.GetName() == c.Name() {
				if t := cfg.GetEdsClusterConfig().GetEdsConfig().GetInitialFetchTimeout(); t != nil {
					timeout = t.AsDuration()
				}
			}
		}
		sc := s.stats.Scope("cluster." + c.ObservabilityName() + ".")
		ec := &edsCluster{c: c, service: service, timeout: timeout, stats: edsStats{
			attempt:          sc.Counter("update_attempt"),
			success:          sc.Counter("update_success"),
			failure:          sc.Counter("update_failure"),
			rejected:         sc.Counter("update_rejected"),
			empty:            sc.Counter("update_empty"),
			initFetchTimeout: sc.Counter("init_fetch_timeout"),
			version:          sc.Gauge("version"),
			updateTime:       sc.Gauge("update_time"),
			versionText:      sc.TextReadout("version_text"),
		}}
		if len(d.byService[service]) == 0 {
			names = append(names, service)
		}
		d.byService[service] = append(d.byService[service], ec)
		d.clusters = append(d.clusters, ec)
	}
	// The clusters keep their own stats; the subscription's would only
	// repeat them under a name Envoy does not have.
	_, err := s.ads.Subscribe(xds.SubscriptionOptions{
		TypeURL:       endpointTypeURL,
		Stats:         stats.NewStore().Scope(""),
		ResourceNames: names,
		// Envoy's ConnectionFailure, counted by every EDS cluster.
		OnStreamFailure: func() {
			for _, ec := range d.clusters {
				ec.stats.failure.Inc()
				ec.stats.attempt.Inc()
			}
		},
	}, d.apply(s))
	if err != nil {
		return nil, &bootstrap.FieldError{Path: "static_resources.clusters", Reason: err.Error()}
	}
	return d, nil
}

// start arms each cluster's initial fetch timeout: when it passes without
// a load assignment, the cluster stops warming, without hosts, as Envoy's.
func (d *endpointDiscovery) start(log func(msg string, kv ...any)) {
	if d == nil {
		return
	}
	for _, ec := range d.clusters {
		ec.stats.attempt.Inc() // Envoy counts the subscription's start
		if ec.timeout <= 0 {
			continue
		}
		time.AfterFunc(ec.timeout, func() {
			if ec.c.EndWarming() {
				ec.stats.initFetchTimeout.Inc()
				ec.stats.attempt.Inc()
				log("eds: initial fetch timed out; the cluster starts without endpoints", "cluster", ec.c.Name())
			}
		})
	}
}

// apply returns the subscription's apply function. Every load assignment
// of a response is checked before any applies: a response with one bad
// assignment is rejected whole, and the clusters keep their hosts.
func (d *endpointDiscovery) apply(s *Server) func(xds.Update) error {
	return func(u xds.Update) error {
		type change struct {
			ec         *edsCluster
			cla        *endpointv3.ClusterLoadAssignment
			priorities [][]*upstream.Host
		}
		var (
			changes []change
			errs    []error
		)
		for i, r := range u.Resources {
			cla, ok := r.(*endpointv3.ClusterLoadAssignment)
			if !ok {
				return fmt.Errorf("resources[%d]: not a ClusterLoadAssignment", i)
			}
			for _, ec := range d.byService[cla.GetClusterName()] {
				priorities, err := ec.c.EDSHosts(cla)
				if err != nil {
					errs = append(errs, fieldpath.Prefix("resources["+strconv.Itoa(i)+"].", err))
					continue
				}
				changes = append(changes, change{ec: ec, cla: cla, priorities: priorities})
			}
		}
		for _, ec := range d.clusters {
			ec.stats.attempt.Inc()
		}
		if err := errors.Join(errs...); err != nil {
			for _, ec := range d.clusters {
				ec.stats.rejected.Inc()
			}
			return err
		}
		now := s.now()
		for _, ch := range changes {
			ch.ec.c.SetEDSHosts(ch.priorities)
			ch.ec.mu.Lock()
			ch.ec.assignment = proto.CloneOf(ch.cla)
			ch.ec.mu.Unlock()
			st := ch.ec.stats
			st.success.Inc()
			if len(ch.cla.GetEndpoints()) == 0 {
				st.empty.Inc()
			}
			st.updateTime.Set(now.UnixMilli())
			st.version.Set(int64(xxhash.Sum64String(u.VersionInfo)))
			st.versionText.Set(u.VersionInfo)
			s.logs.Logger("upstream").V(1).Info("eds: hosts updated", "cluster", ch.ec.c.Name(), "version", u.VersionInfo)
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
	for _, ec := range d.clusters {
		if ec.c.Name() == cluster {
			ec.mu.Lock()
			defer ec.mu.Unlock()
			return ec.assignment
		}
	}
	return nil
}
