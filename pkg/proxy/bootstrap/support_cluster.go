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
	"envoy.config.cluster.v3.Cluster.metadata":                    {},
	"envoy.config.cluster.v3.Cluster.upstream_connection_options": {},
	"envoy.config.cluster.v3.Cluster.upstream_bind_config":        {},
	// The bind configuration of the clusters without their own.
	"envoy.config.bootstrap.v3.ClusterManager.upstream_bind_config": {},
	// Envoy creates a cluster's per-worker copy on the worker's first
	// request to it rather than on every worker up front: Outrigger's
	// workers share one cluster and keep no copy, so every cluster is
	// already as deferred as the option asks (docs/compat.md).
	"envoy.config.bootstrap.v3.ClusterManager.enable_deferred_cluster_creation": {},
	"envoy.config.core.v3.BindConfig.source_address":                            {},
	"envoy.config.core.v3.BindConfig.freebind":                                  {},
	"envoy.config.core.v3.BindConfig.socket_options":                            {},
	"envoy.config.cluster.v3.UpstreamConnectionOptions.tcp_keepalive":           {},
	// Connections race an endpoint's addresses (pkg/proxy/cluster,
	// happyeyeballs.go).
	"envoy.config.cluster.v3.UpstreamConnectionOptions.happy_eyeballs_config":                            {},
	"envoy.config.cluster.v3.UpstreamConnectionOptions.HappyEyeballsConfig.first_address_family_version": {values: []string{"DEFAULT", "V4", "V6"}},
	"envoy.config.cluster.v3.UpstreamConnectionOptions.HappyEyeballsConfig.first_address_family_count":   {},
	"envoy.config.core.v3.TcpKeepalive.keepalive_probes":                                                 {},
	"envoy.config.core.v3.TcpKeepalive.keepalive_time":                                                   {},
	"envoy.config.core.v3.TcpKeepalive.keepalive_interval":                                               {},
	"envoy.config.cluster.v3.Cluster.per_connection_buffer_limit_bytes":                                  {},
	// The optional histograms (pkg/proxy/upstream, cluster_stats_tracked.go);
	// per_endpoint_stats is refused (refusedWhy).
	// Connections opened ahead of demand on HTTP/1.1 clusters
	// (pkg/proxy/cluster, preconnect.go); predictive_preconnect_ratio is
	// refused (refusedWhy).
	"envoy.config.cluster.v3.Cluster.preconnect_policy":                              {},
	"envoy.config.cluster.v3.Cluster.PreconnectPolicy.per_upstream_preconnect_ratio": {},
	"envoy.config.cluster.v3.Cluster.track_timeout_budgets":                          {},
	"envoy.config.cluster.v3.Cluster.track_cluster_stats":                            {},
	"envoy.config.cluster.v3.TrackClusterStats.timeout_budgets":                      {},
	"envoy.config.cluster.v3.TrackClusterStats.request_response_sizes":               {},
	"envoy.config.cluster.v3.Cluster.load_assignment":                                {},
	"envoy.config.cluster.v3.Cluster.circuit_breakers":                               {},
	// The deprecated cluster-level HTTP options, read as Envoy reads them
	// when typed_extension_protocol_options has no HttpProtocolOptions.
	"envoy.config.cluster.v3.Cluster.http2_protocol_options":         {},
	"envoy.config.cluster.v3.Cluster.http_protocol_options":          {},
	"envoy.config.cluster.v3.Cluster.common_http_protocol_options":   {},
	"envoy.config.cluster.v3.Cluster.upstream_http_protocol_options": {},
	// The values must be HttpProtocolOptions; the cluster builder checks
	// the key and the type (a category here would only apply to Any
	// fields, not to map values).
	"envoy.config.cluster.v3.Cluster.typed_extension_protocol_options":       {},
	"envoy.config.cluster.v3.Cluster.common_lb_config":                       {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.healthy_panic_threshold": {},
	// Every host's connections drain when hosts join or leave
	// (pkg/proxy/cluster, hostsetchange.go).
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.close_connections_on_host_set_change": {},
	// New hosts of STRICT_DNS and EDS clusters wait for their first
	// check, excluded from the balancer's counts (pkg/proxy/healthcheck
	// PendingNewHosts, pkg/proxy/lb splitHealth).
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.ignore_new_hosts_until_first_hc": {},
	// 0s only (pkg/proxy/cluster refuses a window): updates apply at once.
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.update_merge_window": {},
	"envoy.type.v3.Percent.value":                                        {},

	// Load balancers (pkg/proxy/lb): lb_policy with its configuration,
	// or the typed load_balancing_policy.
	"envoy.config.cluster.v3.Cluster.lb_policy":                                                         {values: []string{"ROUND_ROBIN", "LEAST_REQUEST", "RING_HASH", "RANDOM", "MAGLEV", "CLUSTER_PROVIDED", "LOAD_BALANCING_POLICY_CONFIG"}},
	"envoy.config.cluster.v3.Cluster.round_robin_lb_config":                                             {},
	"envoy.config.cluster.v3.Cluster.RoundRobinLbConfig.slow_start_config":                              {},
	"envoy.config.cluster.v3.Cluster.least_request_lb_config":                                           {},
	"envoy.config.cluster.v3.Cluster.LeastRequestLbConfig.choice_count":                                 {},
	"envoy.config.cluster.v3.Cluster.LeastRequestLbConfig.active_request_bias":                          {},
	"envoy.config.cluster.v3.Cluster.LeastRequestLbConfig.slow_start_config":                            {},
	"envoy.config.cluster.v3.Cluster.SlowStartConfig.slow_start_window":                                 {},
	"envoy.config.cluster.v3.Cluster.SlowStartConfig.aggression":                                        {},
	"envoy.config.cluster.v3.Cluster.SlowStartConfig.min_weight_percent":                                {},
	"envoy.config.core.v3.RuntimeDouble.default_value":                                                  {},
	"envoy.config.core.v3.RuntimeDouble.runtime_key":                                                    {},
	"envoy.config.cluster.v3.Cluster.ring_hash_lb_config":                                               {},
	"envoy.config.cluster.v3.Cluster.RingHashLbConfig.minimum_ring_size":                                {},
	"envoy.config.cluster.v3.Cluster.RingHashLbConfig.maximum_ring_size":                                {},
	"envoy.config.cluster.v3.Cluster.RingHashLbConfig.hash_function":                                    {},
	"envoy.config.cluster.v3.Cluster.maglev_lb_config":                                                  {},
	"envoy.config.cluster.v3.Cluster.MaglevLbConfig.table_size":                                         {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.consistent_hashing_lb_config":                       {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.ConsistentHashingLbConfig.use_hostname_for_hashing": {},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig.ConsistentHashingLbConfig.hash_balance_factor":      {},
	"envoy.config.cluster.v3.Cluster.load_balancing_policy":                                             {},
	"envoy.config.cluster.v3.LoadBalancingPolicy.policies":                                              {firstOfCategory: "envoy.load_balancing_policies"},
	"envoy.config.cluster.v3.LoadBalancingPolicy.Policy.typed_extension_config":                         {},
	// The typed policies (envoy.load_balancing_policies.*).
	"envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin.slow_start_config":        {},
	"envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest.choice_count":         {},
	"envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest.active_request_bias":  {},
	"envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest.slow_start_config":    {},
	"envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest.enable_full_scan":     {},
	"envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest.selection_method":     {},
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.hash_function":                {},
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.minimum_ring_size":            {},
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.maximum_ring_size":            {},
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.use_hostname_for_hashing":     {},
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.consistent_hashing_lb_config": {},
	"envoy.extensions.load_balancing_policies.maglev.v3.Maglev.table_size":                        {},
	"envoy.extensions.load_balancing_policies.maglev.v3.Maglev.consistent_hashing_lb_config":      {},
	// Locality weights folded into the ring or table (pkg/proxy/lb, hashlocality.go).
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.locality_weighted_lb_config":            {},
	"envoy.extensions.load_balancing_policies.maglev.v3.Maglev.locality_weighted_lb_config":                 {},
	"envoy.extensions.load_balancing_policies.common.v3.SlowStartConfig.slow_start_window":                  {},
	"envoy.extensions.load_balancing_policies.common.v3.SlowStartConfig.aggression":                         {},
	"envoy.extensions.load_balancing_policies.common.v3.SlowStartConfig.min_weight_percent":                 {},
	"envoy.extensions.load_balancing_policies.common.v3.ConsistentHashingLbConfig.use_hostname_for_hashing": {},
	"envoy.extensions.load_balancing_policies.common.v3.ConsistentHashingLbConfig.hash_balance_factor":      {},
	"envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash.hash_balance_factor":                    {},
	// The balancer's own hash policy, which replaces the route's and
	// tcp_proxy's (pkg/proxy/cluster, lbhash.go).
	"envoy.extensions.load_balancing_policies.common.v3.ConsistentHashingLbConfig.hash_policy": {},

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

	// The DNS cluster extension (cluster_type envoy.clusters.dns), the
	// same clusters in their newer form (pkg/proxy/cluster, dnstype.go).
	"envoy.extensions.clusters.dns.v3.DnsCluster.dns_refresh_rate":                 {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.dns_failure_refresh_rate":         {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.RefreshRate.base_interval":        {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.RefreshRate.max_interval":         {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.respect_dns_ttl":                  {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.dns_jitter":                       {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.typed_dns_resolver_config":        {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.dns_lookup_family":                {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.all_addresses_in_single_endpoint": {},
	"envoy.extensions.clusters.dns.v3.DnsCluster.dns_min_refresh_rate":             {},

	// ORIGINAL_DST clusters (pkg/proxy/cluster, origdst.go); other types
	// accept and ignore them, as Envoy. metadata_key reads the request's
	// dynamic metadata (origdst_metadata.go).
	"envoy.config.cluster.v3.Cluster.cleanup_interval":                           {},
	"envoy.config.cluster.v3.Cluster.original_dst_lb_config":                     {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.use_http_header":        {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.http_header_name":       {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.upstream_port_override": {},
	"envoy.config.cluster.v3.Cluster.OriginalDstLbConfig.metadata_key":           {},

	// Active health checks (pkg/proxy/healthcheck): one per cluster.
	"envoy.config.cluster.v3.Cluster.health_checks":                 {},
	"envoy.config.cluster.v3.Cluster.ignore_health_on_host_removal": {},
	// A failed or ejected host's connections close (pkg/proxy/cluster,
	// hostfailure.go).
	"envoy.config.cluster.v3.Cluster.close_connections_on_host_health_failure": {},
	"envoy.config.core.v3.HealthCheck.timeout":                                 {},
	"envoy.config.core.v3.HealthCheck.interval":                                {},
	"envoy.config.core.v3.HealthCheck.initial_jitter":                          {},
	"envoy.config.core.v3.HealthCheck.interval_jitter":                         {},
	"envoy.config.core.v3.HealthCheck.interval_jitter_percent":                 {},
	"envoy.config.core.v3.HealthCheck.unhealthy_threshold":                     {},
	"envoy.config.core.v3.HealthCheck.healthy_threshold":                       {},
	"envoy.config.core.v3.HealthCheck.alt_port":                                {},
	"envoy.config.core.v3.HealthCheck.reuse_connection":                        {},
	"envoy.config.core.v3.HealthCheck.no_traffic_interval":                     {},
	"envoy.config.core.v3.HealthCheck.no_traffic_healthy_interval":             {},
	"envoy.config.core.v3.HealthCheck.unhealthy_interval":                      {},
	"envoy.config.core.v3.HealthCheck.unhealthy_edge_interval":                 {},
	"envoy.config.core.v3.HealthCheck.healthy_edge_interval":                   {},
	"envoy.config.core.v3.HealthCheck.event_log_path":                          {},
	// event_logger: the file sink (checked by the TypedExtensionConfig
	// entry), writing what event_log_path writes.
	"envoy.config.core.v3.HealthCheck.event_logger":                                             {},
	"envoy.extensions.health_check.event_sinks.file.v3.HealthCheckEventFileSink.event_log_path": {},
	"envoy.config.core.v3.HealthCheck.always_log_health_check_failures":                         {},
	"envoy.config.core.v3.HealthCheck.always_log_health_check_success":                          {},
	"envoy.config.core.v3.HealthCheck.tls_options":                                              {},
	"envoy.config.core.v3.HealthCheck.TlsOptions.alpn_protocols":                                {},
	"envoy.config.core.v3.HealthCheck.http_health_check":                                        {},
	"envoy.config.core.v3.HealthCheck.tcp_health_check":                                         {},
	"envoy.config.core.v3.HealthCheck.grpc_health_check":                                        {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.host":                                     {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.path":                                     {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.send":                                     {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.receive":                                  {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.response_buffer_size":                     {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.request_headers_to_add":                   {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.request_headers_to_remove":                {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.expected_statuses":                        {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.retriable_statuses":                       {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.codec_client_type":                        {values: []string{"HTTP1", "HTTP2"}},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.service_name_matcher":                     {},
	"envoy.config.core.v3.HealthCheck.HttpHealthCheck.method":                                   {},
	"envoy.config.core.v3.HealthCheck.TcpHealthCheck.send":                                      {},
	"envoy.config.core.v3.HealthCheck.TcpHealthCheck.receive":                                   {},
	// The check's own PROXY header: the version alone (pkg/proxy/healthcheck
	// refuses TLV settings, which a check's header cannot carry).
	"envoy.config.core.v3.HealthCheck.TcpHealthCheck.proxy_protocol_config": {},
	"envoy.config.core.v3.HealthCheck.GrpcHealthCheck.service_name":         {},
	"envoy.config.core.v3.HealthCheck.GrpcHealthCheck.authority":            {},
	"envoy.config.core.v3.HealthCheck.GrpcHealthCheck.initial_metadata":     {},
	"envoy.config.core.v3.HealthCheck.Payload.text":                         {},
	"envoy.config.core.v3.HealthCheck.Payload.binary":                       {},

	// Circuit breakers.
	"envoy.config.cluster.v3.CircuitBreakers.thresholds": {},
	// max_connections per host (pkg/proxy/cluster, perhost.go); Envoy
	// reads nothing else there, and the build notes the rest.
	"envoy.config.cluster.v3.CircuitBreakers.per_host_thresholds":                          {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.priority":                          {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_connections":                   {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_pending_requests":              {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_requests":                      {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_retries":                       {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.track_remaining":                   {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.retry_budget":                      {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget.budget_percent":        {},
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget.min_retry_concurrency": {},
	// budget_interval: the budget counts the requests started within it
	// (pkg/proxy/cluster, budget_window.go).
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget.budget_interval": {},

	// Outlier detection (pkg/proxy/outlier); monitors (extensions) are
	// refused. The bootstrap's event log is
	// cluster_manager.outlier_detection.event_log_path.
	"envoy.config.cluster.v3.Cluster.outlier_detection":                                    {},
	"envoy.config.cluster.v3.OutlierDetection.consecutive_5xx":                             {},
	"envoy.config.cluster.v3.OutlierDetection.interval":                                    {},
	"envoy.config.cluster.v3.OutlierDetection.base_ejection_time":                          {},
	"envoy.config.cluster.v3.OutlierDetection.max_ejection_percent":                        {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_consecutive_5xx":                   {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_success_rate":                      {},
	"envoy.config.cluster.v3.OutlierDetection.success_rate_minimum_hosts":                  {},
	"envoy.config.cluster.v3.OutlierDetection.success_rate_request_volume":                 {},
	"envoy.config.cluster.v3.OutlierDetection.success_rate_stdev_factor":                   {},
	"envoy.config.cluster.v3.OutlierDetection.consecutive_gateway_failure":                 {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_consecutive_gateway_failure":       {},
	"envoy.config.cluster.v3.OutlierDetection.split_external_local_origin_errors":          {},
	"envoy.config.cluster.v3.OutlierDetection.consecutive_local_origin_failure":            {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_consecutive_local_origin_failure":  {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_local_origin_success_rate":         {},
	"envoy.config.cluster.v3.OutlierDetection.failure_percentage_threshold":                {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_failure_percentage":                {},
	"envoy.config.cluster.v3.OutlierDetection.enforcing_failure_percentage_local_origin":   {},
	"envoy.config.cluster.v3.OutlierDetection.failure_percentage_minimum_hosts":            {},
	"envoy.config.cluster.v3.OutlierDetection.failure_percentage_request_volume":           {},
	"envoy.config.cluster.v3.OutlierDetection.max_ejection_time":                           {},
	"envoy.config.cluster.v3.OutlierDetection.max_ejection_time_jitter":                    {},
	"envoy.config.cluster.v3.OutlierDetection.successful_active_health_check_uneject_host": {},
	"envoy.config.cluster.v3.OutlierDetection.always_eject_one_host":                       {},
	// x-envoy-degraded from an upstream degrades its host (pkg/proxy/outlier, degraded.go).
	"envoy.config.cluster.v3.OutlierDetection.detect_degraded_hosts":           {},
	"envoy.config.bootstrap.v3.Bootstrap.cluster_manager":                      {},
	"envoy.config.bootstrap.v3.ClusterManager.outlier_detection":               {},
	"envoy.config.bootstrap.v3.ClusterManager.OutlierDetection.event_log_path": {},
	// Load reports to a Load Reporting Service over gRPC (pkg/proxy/loadreport);
	// the semantic check requires a gRPC source.
	"envoy.config.bootstrap.v3.ClusterManager.load_stats_config": {},

	// Load assignment.
	"envoy.config.endpoint.v3.ClusterLoadAssignment.cluster_name":                   {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.endpoints":                      {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.policy":                         {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.overprovisioning_factor": {},
	// weighted_priority_health: a level's health by its hosts' weights
	// (pkg/proxy/lb, priority.go); EDS updates replace both with each
	// assignment (pkg/proxy/cluster, eds.go).
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.weighted_priority_health": {},
	// endpoint_stale_after: a discovered assignment's hosts go when no
	// other arrives in time (pkg/proxy/server, endpoint_discovery.go).
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.endpoint_stale_after": {},
	// drop_overloads: the router's drop before it picks a host
	// (pkg/proxy/cluster, dropoverload.go).
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.drop_overloads":               {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.DropOverload.category":        {},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy.DropOverload.drop_percentage": {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.locality":                              {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.lb_endpoints":                          {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.load_balancing_weight":                 {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.priority":                              {},
	"envoy.config.endpoint.v3.LbEndpoint.endpoint":                                       {},
	"envoy.config.endpoint.v3.LbEndpoint.health_status":                                  {},
	"envoy.config.endpoint.v3.LbEndpoint.metadata":                                       {},
	"envoy.config.endpoint.v3.LbEndpoint.load_balancing_weight":                          {},
	"envoy.config.endpoint.v3.Endpoint.address":                                          {},
	"envoy.config.endpoint.v3.Endpoint.hostname":                                         {},
	// The addresses its connections race with address (happy eyeballs).
	"envoy.config.endpoint.v3.Endpoint.additional_addresses":      {},
	"envoy.config.endpoint.v3.Endpoint.AdditionalAddress.address": {},
	// health_check_config: where and how the cluster's active checks
	// reach the endpoint (pkg/proxy/cluster hostHealthCheck,
	// pkg/proxy/healthcheck checkAddress and checkHostname).
	"envoy.config.endpoint.v3.Endpoint.health_check_config":                           {},
	"envoy.config.endpoint.v3.Endpoint.HealthCheckConfig.port_value":                  {},
	"envoy.config.endpoint.v3.Endpoint.HealthCheckConfig.hostname":                    {},
	"envoy.config.endpoint.v3.Endpoint.HealthCheckConfig.address":                     {},
	"envoy.config.endpoint.v3.Endpoint.HealthCheckConfig.disable_active_health_check": {},
	"envoy.config.core.v3.Metadata.filter_metadata":                                   {},

	// Upstream HTTP protocol options (the HttpProtocolOptions extension).
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.explicit_http_config":                      {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig.http_protocol_options":  {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig.http2_protocol_options": {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.common_http_protocol_options":              {},
	// http_filters: the cluster's upstream chain, which overrides the
	// router's upstream_http_filters.
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.http_filters": {},
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
