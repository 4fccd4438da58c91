package server

import (
	"errors"
	"fmt"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// clusterTypeURL is the type of the clusters CDS sends.
const clusterTypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// subscribeClustersADS subscribes the clusters to the stream cds_config
// names (the ADS stream, or its own stream to an api_config_source's
// service), before the stream opens: as Envoy's, the server waits for
// the first response (or the initial fetch timeout) and for the warming
// of its clusters before it asks for listeners.
func (s *Server) subscribeClustersADS() error {
	cds := s.boot.GetDynamicResources().GetCdsConfig()
	if cds == nil || s.clusters == nil {
		return nil
	}
	stream, err := s.streamFor(cds, clusterTypeURL)
	if err != nil {
		return fieldpath.Prefix("dynamic_resources.cds_config.", err)
	}
	timeout := xds.DefaultInitialFetchTimeout
	if t := cds.GetInitialFetchTimeout(); t != nil {
		timeout = t.AsDuration()
	}
	sub, err := stream.Subscribe(xds.SubscriptionOptions{
		TypeURL:             clusterTypeURL,
		Stats:               s.stats.Scope("cluster_manager.cds."),
		InitialFetchTimeout: timeout,
	}, s.applyClusterUpdate)
	if err != nil {
		return &bootstrap.FieldError{Path: "dynamic_resources.cds_config", Reason: err.Error()}
	}
	s.cds = sub
	return nil
}

// applyClusterUpdate applies one cluster discovery response: the whole set
// of discovered clusters. Each cluster is checked as a static one would be
// (constraints, support table), then built; any problem rejects the
// response whole, with the paths of every bad cluster, and the clusters in
// service stay as they were. A cluster equal to the discovered one of its
// name was checked when it arrived and is not checked again (see
// cluster.Manager.ApplyDiscoveredChecked). It runs on the stream
// goroutine.
func (s *Server) applyClusterUpdate(u xds.Update) error {
	cfgs := make([]*clusterv3.Cluster, 0, len(u.Resources))
	for i, r := range u.Resources {
		c, ok := r.(*clusterv3.Cluster)
		if !ok {
			return fmt.Errorf("resources[%d]: %s is not a cluster", i, r.ProtoReflect().Descriptor().FullName())
		}
		cfgs = append(cfgs, c)
	}
	check := func(i int, c *clusterv3.Cluster) error {
		var errs []error
		if err := bootstrap.ValidateCluster(c, s.ext); err != nil {
			errs = append(errs, fieldpath.Prefix("resources["+strconv.Itoa(i)+"].", err))
		}
		if c.GetType() == clusterv3.Cluster_EDS && c.GetEdsClusterConfig().GetEdsConfig().GetAds() != nil && s.ads == nil {
			// Its endpoints come over ADS only: without the stream they
			// would never be asked for.
			errs = append(errs, fmt.Errorf("resources[%d].eds_cluster_config.eds_config.ads: requires dynamic_resources.ads_config (the ADS stream it names)", i))
		}
		return errors.Join(errs...)
	}
	if err := s.clusters.ApplyDiscoveredChecked(cfgs, u.VersionOf, s.now(), check); err != nil {
		return err
	}
	// The discovered EDS clusters' services are asked for on the same
	// stream.
	return s.eds.sync(s.clusters.DiscoveredEDS())
}
