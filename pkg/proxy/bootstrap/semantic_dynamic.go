package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// dynamicResources checks dynamic_resources. Clusters and listeners come
// from a file, a gRPC stream or REST; the support check refuses the other config
// sources by their own paths, but an lds_config with no source at all (or
// with only refused ones) would otherwise leave the listeners silently
// undiscovered.
func (s *semanticChecker) dynamicResources(d *bootstrapv3.Bootstrap_DynamicResources) {
	if ads := d.GetAdsConfig(); ads != nil {
		s.adsConfig(ads, "dynamic_resources.ads_config")
	}
	if cds := d.GetCdsConfig(); cds != nil {
		switch {
		case cds.GetApiConfigSource() != nil:
			s.apiConfigSource(cds.GetApiConfigSource(), "dynamic_resources.cds_config.api_config_source", true)
		case cds.GetAds() == nil:
			s.fileConfigSource(cds, "dynamic_resources.cds_config", "clusters")
		case d.GetAdsConfig() == nil:
			s.fail("dynamic_resources.cds_config.ads", "requires dynamic_resources.ads_config (the ADS stream it names)")
		}
	}
	if lds := d.GetLdsConfig(); lds != nil {
		switch {
		case lds.GetApiConfigSource() != nil:
			s.apiConfigSource(lds.GetApiConfigSource(), "dynamic_resources.lds_config.api_config_source", true)
		case lds.GetAds() != nil:
			if d.GetAdsConfig() == nil {
				s.fail("dynamic_resources.lds_config.ads", "requires dynamic_resources.ads_config (the ADS stream it names)")
			}
		default:
			s.fileConfigSource(lds, "dynamic_resources.lds_config", "listeners")
		}
	}
}

// adsConfig checks the ADS stream's api_config_source (gRPC only).
func (s *semanticChecker) adsConfig(ads *corev3.ApiConfigSource, path string) {
	s.apiConfigSource(ads, path, false)
}

// apiConfigSource checks an api_config_source (see
// APIConfigSourceProblems); rest allows REST polling, for a resource
// type's own config source.
func (s *semanticChecker) apiConfigSource(api *corev3.ApiConfigSource, path string, rest bool) {
	for _, p := range APIConfigSourceProblems(api, rest) {
		s.fail(childPath(path, p.Path), "%s", p.Reason)
	}
}

// fileConfigSource requires a config source to name a file: a
// path_config_source, or the deprecated path that means the same. The
// oneof is read by reflection, which avoids the deprecated path's getters.
func (s *semanticChecker) fileConfigSource(cs *corev3.ConfigSource, path, what string) {
	m := cs.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("config_source_specifier"))
	switch {
	case fd != nil && fd.Name() == "path_config_source":
		// Its path's min_len constraint is checked with the others.
	case fd != nil && fd.Name() == "path":
		if m.Get(fd).String() == "" {
			s.fail(childPath(path, "path"), "must not be empty")
		}
	default:
		s.fail(path, "a path_config_source (or path), ads or api_config_source is required: Outrigger reads %s from a file, a gRPC stream or REST only", what)
	}
}

// edsClusters checks the static clusters of type EDS: their endpoints come
// from the ADS stream (eds_config: {ads: {}}), the only EDS source
// Outrigger has; the stream's own cluster cannot be one of them, or its
// endpoints would have to come over itself. eds_cluster_config on another
// type of cluster, which nothing would read, is refused.
func (s *semanticChecker) edsClusters(b *bootstrapv3.Bootstrap) {
	adsCluster := ""
	if gs := b.GetDynamicResources().GetAdsConfig().GetGrpcServices(); len(gs) > 0 {
		adsCluster = gs[0].GetEnvoyGrpc().GetClusterName()
	}
	for i, c := range b.GetStaticResources().GetClusters() {
		path := indexPath("static_resources.clusters", i)
		if !s.edsCluster(c, path, b.GetDynamicResources().GetAdsConfig() != nil) {
			continue
		}
		if c.GetName() != "" && c.GetName() == adsCluster {
			s.fail(childPath(path, "type"), "the ADS stream's cluster %q cannot take its endpoints from that stream: give it STATIC or DNS endpoints", c.GetName())
		}
	}
}

// edsCluster checks one cluster's EDS settings (see edsClusters), static
// or discovered; hasADS tells whether the ADS stream exists. It reports
// whether the cluster is of type EDS.
func (s *semanticChecker) edsCluster(c *clusterv3.Cluster, path string, hasADS bool) bool {
	if c.GetType() != clusterv3.Cluster_EDS || c.GetClusterType() != nil {
		if c.GetEdsClusterConfig() != nil {
			s.fail(childPath(path, "eds_cluster_config"), "only a cluster of type EDS has one")
		}
		return false
	}
	eds := c.GetEdsClusterConfig().GetEdsConfig()
	switch {
	case eds.GetApiConfigSource() != nil:
		s.apiConfigSource(eds.GetApiConfigSource(), childPath(path, "eds_cluster_config.eds_config.api_config_source"), true)
	case eds == nil:
		s.fail(childPath(path, "eds_cluster_config.eds_config"), "required: where the cluster's endpoints come from (ads: {})")
	case eds.GetAds() == nil:
		s.fail(childPath(path, "eds_cluster_config.eds_config"), "ads: {} or api_config_source is required: Outrigger takes endpoints from a gRPC stream or REST only")
	case !hasADS:
		s.fail(childPath(path, "eds_cluster_config.eds_config.ads"), "requires dynamic_resources.ads_config (the ADS stream it names)")
	}
	return true
}
