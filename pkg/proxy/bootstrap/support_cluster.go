package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedCluster lists the cluster fields Outrigger implements (see supportedCore).
var supportedCluster = map[protoreflect.FullName]fieldSupport{
	// Static resources: clusters.
	"envoy.config.bootstrap.v3.Bootstrap.StaticResources.clusters": {},

	// Clusters.
	"envoy.config.cluster.v3.Cluster.name":                        {},
	"envoy.config.cluster.v3.Cluster.alt_stat_name":               {},
	"envoy.config.cluster.v3.Cluster.type":                        {values: []string{"STATIC", "STRICT_DNS", "LOGICAL_DNS", "ORIGINAL_DST", "EDS"}},
	"envoy.config.cluster.v3.Cluster.connect_timeout":             {},
	"envoy.config.cluster.v3.Cluster.max_requests_per_connection": {},
	"envoy.config.cluster.v3.Cluster.protocol_selection":          {values: []string{"USE_CONFIGURED_PROTOCOL", "USE_DOWNSTREAM_PROTOCOL"}},
	// Metadata is data: /config_dump shows it, and access-log formats
	// read it (%CLUSTER_METADATA%, %UPSTREAM_METADATA% for endpoints').
	"envoy.config.cluster.v3.Cluster.metadata":                          {},
	"envoy.config.cluster.v3.Cluster.upstream_connection_options":       {},
	"envoy.config.cluster.v3.Cluster.upstream_bind_config":              {},
	"envoy.config.core.v3.BindConfig.source_address":                    {},
	"envoy.config.core.v3.BindConfig.freebind":                          {},
	"envoy.config.core.v3.BindConfig.socket_options":                    {},
	"envoy.config.cluster.v3.UpstreamConnectionOptions.tcp_keepalive":   {},
	"envoy.config.core.v3.TcpKeepalive.keepalive_probes":                {},
	"envoy.config.core.v3.TcpKeepalive.keepalive_time":                  {},
	"envoy.config.core.v3.TcpKeepalive.keepalive_interval":              {},
	"envoy.config.cluster.v3.Cluster.per_connection_buffer_limit_bytes": {},
	"envoy.config.cluster.v3.Cluster.lb_policy":                         {values: []string{"ROUND_ROBIN", "CLUSTER_PROVIDED"}},
	"envoy.config.cluster.v3.Cluster.load_assignment":                   {},
	"envoy.config.cluster.v3.Cluster.circuit_breakers":                  {},
	"envoy.config.cluster.v3.Cluster.http2_protocol_options":            {},
	// The values must be HttpProtocolOptions; the cluster builder checks
	// the key and the type (a category here would only apply to Any
	// fields, not to map values).
	"envoy.config.cluster.v3.Cluster.typed_extension_protocol_options":       {},
	"envoy.config.cluster.v3.Cluster.common_lb_config":                       {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.healthy_panic_threshold": {},
	"envoy.type.v3.Percent.value":                                            {},

	// DNS clusters (STRICT_DNS, LOGICAL_DNS; the resolvers are in
	// support_dns.go). A STATIC cluster accepts and ignores them, as Envoy.
	"envoy.config.cluster.v3.Cluster.dns_refresh_rate":          {},
	"envoy.config.cluster.v3.Cluster.dns_failure_refresh_rate":  {},
	"envoy.config.cluster.v3.Cluster.RefreshRate.base_interval": {},
	"envoy.config.cluster.v3.Cluster.RefreshRate.max_interval":  {},
	"envoy.config.cluster.v3.Cluster.respect_dns_ttl":           {},
	"envoy.config.cluster.v3.Cluster.dns_lookup_family":         {},
	"envoy.config.cluster.v3.Cluster.dns_jitter":                {},
	"envoy.config.cluster.v3.Cluster.dns_resolvers":             {},
	"envoy.config.cluster.v3.Cluster.use_tcp_for_dns_lookups":   {},
	"envoy.config.cluster.v3.Cluster.dns_resolution_config":     {},
	"envoy.config.cluster.v3.Cluster.typed_dns_resolver_config": {},
	"envoy.config.cluster.v3.Cluster.wait_for_warm_on_init":     {},

	// ORIGINAL_DST clusters (pkg/proxy/cluster, origdst.go); other types
	// accept and ignore them, as Envoy. metadata_key is refused.
	"envoy.config.cluster.v3.Cluster.cleanup_interval":                           {},
	"envoy.config.cluster.v3.Cluster.original_dst_lb_config":                     {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.use_http_header":        {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.http_header_name":       {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.upstream_port_override": {},

	// Active health checks (pkg/proxy/healthcheck): one per cluster.
	"envoy.config.cluster.v3.Cluster.health_checks":                              {},
	"envoy.config.cluster.v3.Cluster.ignore_health_on_host_removal":              {},
	"envoy.config.core.v3.HealthCheck.timeout":                                   {},
	"envoy.config.core.v3.HealthCheck.interval":                                  {},
	"envoy.config.core.v3.HealthCheck.initial_jitter":                            {},
	"envoy.config.core.v3.HealthCheck.interval_jitter":                           {},
	"envoy.config.core.v3.HealthCheck.interval_jitter_percent":                   {},
	"envoy.config.core.v3.HealthCheck.unhealthy_threshold":                       {},
	"envoy.config.core.v3.HealthCheck.healthy_threshold":                         {},
	"envoy.config.core.v3.HealthCheck.alt_port":                                  {},
	"envoy.config.core.v3.HealthCheck.reuse_connection":                          {},
	"envoy.config.core.v3.HealthCheck.no_traffic_interval":                       {},
	"envoy.config.core.v3.HealthCheck.no_traffic_healthy_interval":               {},
	"envoy.config.core.v3.HealthCheck.unhealthy_interval":                        {},
	"envoy.config.core.v3.HealthCheck.unhealthy_edge_interval":                   {},
	"envoy.config.core.v3.HealthCheck.healthy_edge_interval":                     {},
	"envoy.config.core.v3.HealthCheck.event_log_path":                            {},
	"envoy.config.core.v3.HealthCheck.always_log_health_check_failures":          {},
	"envoy.config.core.v3.HealthCheck.always_log_health_check_success":           {},
	"envoy.config.core.v3.HealthCheck.tls_options":                               {},
	"envoy.config.core.v3.HealthCheck.TlsOptions.alpn_protocols":                 {},
	"envoy.config.core.v3.HealthCheck.http_health_check":                         {},
	"envoy.config.core.v3.HealthCheck.tcp_health_check":                          {},
	"envoy.config.core.v3.HealthCheck.grpc_health_check":                         {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.host":                      {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.path":                      {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.send":                      {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.receive":                   {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.response_buffer_size":      {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.request_headers_to_add":    {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.request_headers_to_remove": {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.expected_statuses":         {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.retriable_statuses":        {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.codec_client_type":         {values: []string{"HTTP1", "HTTP2"}},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.service_name_matcher":      {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.method":                    {},
	"envoy.config.core.v3.HealthCheck.TcpHealthCheck.send":                       {},
	"envoy.config.core.v3.HealthCheck.TcpHealthCheck.receive":                    {},
	"envoy.config.core.v3.HealthCheck.GrpcHealthCheck.service_name":              {},
	"envoy.config.core.v3.HealthCheck.GrpcHealthCheck.authority":                 {},
	"envoy.config.core.v3.HealthCheck.Payload.text":                              {},
	"envoy.config.core.v3.HealthCheck.Payload.binary":                            {},

	// Circuit breakers.
	"envoy.config.cluster.v3.CircuitBreakers.thresholds":                      {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.priority":             {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_connections":      {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_pending_requests": {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_requests":         {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_retries":          {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.track_remaining":      {},

	// Load assignment.
	"envoy.config.endpoint.v3.ClusterLoadAssignment.cluster_name":                   {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.endpoints":                      {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.policy":                         {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.overprovisioning_factor": {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.locality":                         {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.lb_endpoints":                     {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.load_balancing_weight":            {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.priority":                         {},
	"envoy.config.endpoint.v3.LbEndpoint.endpoint":                                  {},
	"envoy.config.endpoint.v3.LbEndpoint.health_status":                             {},
	"envoy.config.endpoint.v3.LbEndpoint.metadata":                                  {},
	"envoy.config.endpoint.v3.LbEndpoint.load_balancing_weight":                     {},
	"envoy.config.endpoint.v3.Endpoint.address":                                     {},
	"envoy.config.endpoint.v3.Endpoint.hostname":                                    {},
	"envoy.config.core.v3.Metadata.filter_metadata":                                 {},

	// Upstream HTTP protocol options (the HttpProtocolOptions extension).
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.explicit_http_config":                      {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig.http_protocol_options":  {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig.http2_protocol_options": {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.common_http_protocol_options":              {},
	// The upstream protocol follows the client's (pkg/proxy/cluster, protocol.go).
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.use_downstream_protocol_config":                 {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.UseDownstreamHttpConfig.http_protocol_options":  {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.UseDownstreamHttpConfig.http2_protocol_options": {},
	"envoy.config.core.v3.HttpProtocolOptions.idle_timeout":                                                 {},
	"envoy.config.core.v3.HttpProtocolOptions.max_requests_per_connection":                                  {},
	// The connection manager's limit on a client's stream, and a
	// cluster's on an upstream request.
	"envoy.config.core.v3.HttpProtocolOptions.max_stream_duration": {},
	// A cluster's limit on an HTTP/1.1 response head; the connection
	// manager refuses it, as its meaning is upstream only
	// (pkg/proxy/httpconn, readSettings).
	"envoy.config.core.v3.HttpProtocolOptions.max_response_headers_kb": {},
}
