package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedTCPProxy lists the fields of envoy.filters.network.tcp_proxy
// that Outrigger implements (see supportedCore and
// pkg/proxy/filters/network/tcpproxy). Not implemented, so refused with
// their path: on_demand.resources_locator. downstream_idle_timeout and
// upstream_idle_timeout, which Envoy's API hides as not implemented, are
// implemented with their documented meaning (docs/compat.md).
var supportedTCPProxy = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.stat_prefix":                                          {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.cluster":                                              {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.weighted_clusters":                                    {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.clusters":                             {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight.name":                   {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight.weight":                 {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight.metadata_match":         {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.metadata_match":                                       {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.proxy_protocol_tlvs":                                  {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.proxy_protocol_tlv_merge_policy":                      {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.idle_timeout":                                         {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.downstream_idle_timeout":                              {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.upstream_idle_timeout":                                {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.access_log":                                           {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.max_connect_attempts":                                 {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.backoff_options":                                      {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.max_downstream_connection_duration":                   {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.max_downstream_connection_duration_jitter_percentage": {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.access_log_flush_interval":                            {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.flush_access_log_on_connected":                        {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.access_log_options":                                   {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.hash_policy":                                          {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.check_drain_close":                                    {},
	"envoy.type.v3.HashPolicy.source_ip":                                                                          {},
	"envoy.type.v3.HashPolicy.filter_state":                                                                       {},
	"envoy.type.v3.HashPolicy.FilterState.key":                                                                    {},
	// ON_DOWNSTREAM_TLS_HANDSHAKE is IMMEDIATE in Outrigger: the listener
	// hands a TLS connection over once its handshake is done.
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.upstream_connect_mode":                             {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.max_early_data_bytes":                              {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TcpAccessLogOptions.access_log_flush_interval":     {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TcpAccessLogOptions.flush_access_log_on_connected": {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TcpAccessLogOptions.flush_access_log_on_start":     {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.tunneling_config":                                  {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.hostname":                          {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.use_post":                          {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.post_path":                         {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.headers_to_add":                    {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.propagate_response_headers":        {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.propagate_response_trailers":       {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.request_id_extension":              {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.request_id_header":                 {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.request_id_metadata_key":           {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.TunnelingConfig.formatters":                        {},
	"envoy.config.core.v3.BackoffStrategy.base_interval":                                                       {},
	"envoy.config.core.v3.BackoffStrategy.max_interval":                                                        {},
}
