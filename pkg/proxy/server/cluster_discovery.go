package server

import (
	"errors"
	"fmt"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// clusterTypeURL is the type of the clusters CDS sends.
const clusterTypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// clusterSource is where discovered clusters come from: a stream or a
// file.
type clusterSource interface {
	// Ready is closed once the first response (or file) is in, or its
	// initial fetch timed out.
	Ready() <-chan struct{}
	// Version is the version_info of the last accepted update.
	Version() string
}

// subscribeClustersADS subscribes the clusters to the stream cds_config
// names (the ADS stream, or its own stream to an api_config_source's
// service), before the stream opens, or to its file: as Envoy's, the
// server waits for the first response (or the initial fetch timeout, or
// the file's first read) and for the warming of its clusters before it
// asks for listeners.
func (s *Server) subscribeClustersADS() error {
	cds := s.boot.GetDynamicResources().GetCdsConfig()
	if cds == nil || s.clusters == nil {
		return nil
	}
	if cds.GetAds() == nil && cds.GetApiConfigSource() == nil {
		return s.subscribeClustersFile(cds)
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

// subscribeClustersFile follows the file cds_config names
// (path_config_source, or the deprecated path), as Envoy's filesystem
// subscription does; Run starts it once the streams have started.
func (s *Server) subscribeClustersFile(cds *corev3.ConfigSource) error {
	path, field := cds.GetPathConfigSource().GetPath(), "dynamic_resources.cds_config.path_config_source.path"
	if path == "" {
		//lint:ignore SA1019 Envoy still accepts the deprecated ConfigSource.path
		path, field = cds.GetPath(), "dynamic_resources.cds_config.path"
	}
	sub, err := xds.NewFileSubscription(xds.FileOptions{
		Path:             path,
		WatchedDirectory: cds.GetPathConfigSource().GetWatchedDirectory().GetPath(),
		WatchModify:      cds.GetPathConfigSource().GetWatchedDirectory().GetWatchModify(),
		TypeURL:          clusterTypeURL,
		Stats:            s.stats.Scope("cluster_manager.cds."),
		Log:              s.logs.Logger("config"),
		Unknown:          s.unknownDynamicPolicy(),
		UnknownCounter:   s.stats.Counter("server.dynamic_unknown_fields"),
		Now:              s.now,
	}, s.applyClusterUpdate)
	var dirErr *xds.WatchedDirectoryError
	if errors.As(err, &dirErr) {
		field = "dynamic_resources.cds_config.path_config_source.watched_directory.path"
	}
	if err != nil {
		return &bootstrap.FieldError{Path: field, Reason: err.Error()}
	}
	s.cds, s.cdsFile = sub, sub
	return nil
}

// applyClusterUpdate applies one cluster discovery response: the whole set
// of discovered clusters. Each cluster is checked as a static one would be
// (constraints, support table), then built; any problem rejects the
// response whole, with the paths of every bad cluster, and the clusters in
// service stay as they were. A cluster equal to the discovered one of its
// name was checked when it arrived and is not checked again (see
// cluster.Manager.ApplyDiscoveredChecked), nor scanned again for
// deprecated fields: a state-of-the-world control plane resends every
// cluster at each change, and scanning 10,000 unchanged ones took longer
// than applying the change. It runs on the stream goroutine.
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
		s.warnDeprecatedResource(i, c)
		var errs []error
		if err := bootstrap.ValidateCluster(c, s.ext); err != nil {
			errs = append(errs, fieldpath.Prefix("resources["+strconv.Itoa(i)+"].", err))
		}
		if c.GetType() == clusterv3.Cluster_EDS && c.GetEdsClusterConfig().GetEdsConfig().GetAds() != nil && s.ads == nil {
			// Its endpoints come over ADS only: without the stream they
			// would never be asked for.
			errs = append(errs, s.noADS(fmt.Sprintf("resources[%d].eds_cluster_config.eds_config.ads", i)))
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
