package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedUDPProxy lists the fields of UDP listeners and of
// envoy.filters.udp_listener.udp_proxy that Outrigger implements (see
// pkg/proxy/listener/udp.go and pkg/proxy/filters/udp/udpproxy). A
// listener address's protocol may say UDP (support_table.go). Not
// implemented, so refused with their path: udp_listener_config's
// quic_options and udp_packet_packet_writer_config; in the udp_proxy,
// session_filters' config_discovery. prefer_gro is accepted only as false
// (the filter and the listener refuse true). tunneling_config sends
// CONNECT-UDP over HTTP/2 only (the filter refuses an HTTP/1.1 cluster).
var supportedUDPProxy = map[protoreflect.FullName]fieldSupport{
	"envoy.config.listener.v3.Listener.udp_listener_config":                                                  {},
	"envoy.config.listener.v3.UdpListenerConfig.downstream_socket_config":                                    {},
	"envoy.config.core.v3.UdpSocketConfig.max_rx_datagram_size":                                              {},
	"envoy.config.core.v3.UdpSocketConfig.prefer_gro":                                                        {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.stat_prefix":                                   {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.cluster":                                       {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.matcher":                                       {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.idle_timeout":                                  {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.hash_policies":                                 {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.HashPolicy.source_ip":                          {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.HashPolicy.key":                                {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.upstream_socket_config":                        {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.use_per_packet_load_balancing":                 {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.use_original_src_ip":                           {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.access_log":                                    {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.proxy_access_log":                              {},
	"envoy.extensions.filters.udp.udp_proxy.v3.Route.cluster":                                                {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.access_log_options":                            {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpAccessLogOptions.access_log_flush_interval": {},
	// session_filters: inline filters of envoy.filters.udp.session
	// (config_discovery is not listed).
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.session_filters":            {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.SessionFilter.name":         {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.SessionFilter.typed_config": {category: "envoy.filters.udp.session", byName: true},
	// tunneling_config: CONNECT-UDP (or POST) tunnels over HTTP/2.
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.tunneling_config":                                         {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.proxy_host":                            {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.proxy_port":                            {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.target_host":                           {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.default_target_port":                   {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.use_post":                              {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.post_path":                             {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.retry_options":                         {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.RetryOptions.max_connect_attempts":     {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.RetryOptions.backoff_options":          {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.headers_to_add":                        {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.buffer_options":                        {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.BufferOptions.max_buffered_datagrams":  {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.BufferOptions.max_buffered_bytes":      {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.propagate_response_headers":            {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.propagate_response_trailers":           {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpTunnelingConfig.formatters":                            {},
	"envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig.UdpAccessLogOptions.flush_access_log_on_tunnel_connected": {},
}
