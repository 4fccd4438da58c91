package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedDynamic lists the dynamic_resources fields Outrigger implements
// (see supportedCore): listeners discovered from a file (LDS over a
// filesystem subscription) or over a state-of-the-world ADS stream to a
// static cluster, or an incremental one, clusters over that stream, and the endpoints of static
// EDS clusters over it; listeners, clusters and secrets also over a
// stream of their own (api_config_source, GRPC or DELTA_GRPC) or REST
// polling (api_type REST). Self and every other discovery service stay
// refused with their path.
// ConfigSource rows are shared by whatever field holds a ConfigSource; the
// semantic check of each such field requires the file source it supports.
var supportedDynamic = map[protoreflect.FullName]fieldSupport{
	// Bootstrap.
	"envoy.config.bootstrap.v3.Bootstrap.dynamic_resources":           {},
	"envoy.config.bootstrap.v3.Bootstrap.DynamicResources.lds_config": {},
	"envoy.config.bootstrap.v3.Bootstrap.DynamicResources.ads_config": {},
	// Clusters over the ADS stream (the semantic check requires ads: {}).
	"envoy.config.bootstrap.v3.Bootstrap.DynamicResources.cds_config": {},

	// The ADS stream: state of the world (GRPC) or incremental
	// (DELTA_GRPC) over gRPC, as Envoy's ADS takes them, to an envoy_grpc
	// cluster (the GrpcService rows are shared with the gRPC access log).
	"envoy.config.core.v3.ApiConfigSource.api_type":                       {values: []string{"GRPC", "DELTA_GRPC", "REST"}},
	"envoy.config.core.v3.ApiConfigSource.transport_api_version":          {values: []string{"V3"}},
	"envoy.config.core.v3.ApiConfigSource.grpc_services":                  {},
	"envoy.config.core.v3.ApiConfigSource.set_node_on_first_message_only": {},
	// A token bucket on the stream's requests, as Envoy's GrpcStream.
	"envoy.config.core.v3.ApiConfigSource.rate_limit_settings": {},
	"envoy.config.core.v3.RateLimitSettings.max_tokens":        {},
	"envoy.config.core.v3.RateLimitSettings.fill_rate":         {},
	// REST polling (a resource type's own config source, not ADS): one
	// static cluster, the poll interval and each request's timeout (the
	// semantic check refuses them on a gRPC source).
	"envoy.config.core.v3.ApiConfigSource.cluster_names":   {},
	"envoy.config.core.v3.ApiConfigSource.refresh_delay":   {},
	"envoy.config.core.v3.ApiConfigSource.request_timeout": {},

	// Static clusters of type EDS whose endpoints come over the ADS stream
	// (the semantic check requires eds_config: {ads: {}}).
	"envoy.config.cluster.v3.Cluster.eds_cluster_config":            {},
	"envoy.config.cluster.v3.Cluster.EdsClusterConfig.eds_config":   {},
	"envoy.config.cluster.v3.Cluster.EdsClusterConfig.service_name": {},

	// Config sources: a file, read at start and re-read when replaced.
	"envoy.config.core.v3.ConfigSource.path_config_source": {},
	"envoy.config.core.v3.ConfigSource.path":               {},
	"envoy.config.core.v3.ConfigSource.ads":                {},
	// A stream of its own to the resource type's discovery service (the
	// semantic check, or the server, of each holder says where).
	"envoy.config.core.v3.ConfigSource.api_config_source":     {},
	"envoy.config.core.v3.ConfigSource.resource_api_version":  {values: []string{"AUTO", "V3"}},
	"envoy.config.core.v3.ConfigSource.initial_fetch_timeout": {},
	"envoy.config.core.v3.PathConfigSource.path":              {},
	"envoy.config.core.v3.PathConfigSource.watched_directory": {},
	"envoy.config.core.v3.WatchedDirectory.path":              {},
	// Files written in place (IN_MODIFY) reload too, not only moves.
	"envoy.config.core.v3.WatchedDirectory.watch_modify": {},
}
