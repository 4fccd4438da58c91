package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedListener lists the listener fields Outrigger implements (see supportedCore).
var supportedListener = map[protoreflect.FullName]fieldSupport{
	// Static resources: listeners.
	"envoy.config.bootstrap.v3.Bootstrap.StaticResources.listeners": {},

	// Listeners.
	"envoy.config.listener.v3.Listener.name": {},
	// An internal listener: no socket, connections from upstream
	// connections to its envoy_internal_address (listener/internal.go).
	"envoy.config.listener.v3.Listener.internal_listener": {},
	// TCP_FASTOPEN on the listening sockets (Linux).
	"envoy.config.listener.v3.Listener.transparent":                {},
	"envoy.config.listener.v3.Listener.tcp_fast_open_queue_length": {},
	"envoy.config.listener.v3.Listener.address":                    {},
	"envoy.config.listener.v3.Listener.additional_addresses":       {},
	"envoy.config.listener.v3.Listener.stat_prefix":                {},
	"envoy.config.listener.v3.Listener.filter_chains":              {},
	"envoy.config.listener.v3.Listener.default_filter_chain":       {},
	// filter_chain_matcher selects a chain by name (package listener's
	// chainmatcher.go).
	"envoy.config.listener.v3.Listener.filter_chain_matcher": {},
	// The matcher's action: the name of the chain it selects.
	"google.protobuf.StringValue.value":                                   {},
	"envoy.config.listener.v3.Listener.per_connection_buffer_limit_bytes": {},
	"envoy.config.listener.v3.Listener.drain_type":                        {},
	"envoy.config.listener.v3.Listener.traffic_direction":                 {},
	"envoy.config.listener.v3.Listener.enable_reuse_port":                 {},
	// Socket options of the listening sockets (pkg/proxy/sockopt), and
	// those of upstream connections (upstream_bind_config).
	"envoy.config.listener.v3.Listener.socket_options": {},
	"envoy.config.listener.v3.Listener.freebind":       {},
	// Listener access logs: one entry per downstream connection
	// (pkg/proxy/listener/accesslog.go); refused on UDP listeners.
	"envoy.config.listener.v3.Listener.access_log": {},
	// Read by %METADATA(LISTENER:...)% in the connection manager's logs.
	"envoy.config.listener.v3.Listener.metadata":            {},
	"envoy.config.core.v3.SocketOption.description":         {},
	"envoy.config.core.v3.SocketOption.level":               {},
	"envoy.config.core.v3.SocketOption.name":                {},
	"envoy.config.core.v3.SocketOption.int_value":           {},
	"envoy.config.core.v3.SocketOption.buf_value":           {},
	"envoy.config.core.v3.SocketOption.state":               {},
	"envoy.config.core.v3.SocketOption.type":                {},
	"envoy.config.core.v3.SocketOption.SocketType.stream":   {},
	"envoy.config.core.v3.SocketOption.SocketType.datagram": {},
	"envoy.config.listener.v3.AdditionalAddress.address":    {},
	// An additional address's own socket options (replacing the
	// listener's) and keep-alive (replacing the listener's tcp_keepalive,
	// a 0 turning it off); see pkg/proxy/listener/keepalive.go.
	"envoy.config.listener.v3.AdditionalAddress.socket_options": {},
	"envoy.config.core.v3.SocketOptionsOverride.socket_options": {},
	"envoy.config.listener.v3.AdditionalAddress.tcp_keepalive":  {},
	// SO_KEEPALIVE and its values on the listening sockets, inherited by
	// the accepted connections (Linux).
	"envoy.config.listener.v3.Listener.tcp_keepalive": {},
	// listen(2)'s backlog (Linux); somaxconn when unset, as in Envoy.
	"envoy.config.listener.v3.Listener.tcp_backlog_size": {},
	// Deprecated: true asks for enable_reuse_port's default (on).
	"envoy.config.listener.v3.Listener.reuse_port": {},
	// No overload action and no global connection limit for the
	// listener and its connection managers (pkg/proxy/server, overload.go).
	"envoy.config.listener.v3.Listener.bypass_overload_manager": {},
	// MPTCP listening sockets (Linux; refused where the kernel has none).
	"envoy.config.listener.v3.Listener.enable_mptcp": {},

	// Listener filters (pkg/proxy/listenerfilter). filter_disabled and
	// config_discovery (ECDS) are not implemented.
	"envoy.config.listener.v3.Listener.listener_filters": {},
	// use_original_dst runs the original_dst listener filter and hands
	// connections to the listener of their original destination
	// (pkg/proxy/listener, handoff.go).
	"envoy.config.listener.v3.Listener.use_original_dst": {},
	// bind_to_port: false binds nothing: the listener only takes the
	// connections a use_original_dst listener hands it.
	"envoy.config.listener.v3.Listener.bind_to_port":                                    {},
	"envoy.config.listener.v3.Listener.listener_filters_timeout":                        {},
	"envoy.config.listener.v3.Listener.continue_on_listener_filters_timeout":            {},
	"envoy.config.listener.v3.ListenerFilter.name":                                      {},
	"envoy.config.listener.v3.ListenerFilter.filter_disabled":                           {},
	"envoy.config.listener.v3.ListenerFilterChainMatchPredicate.or_match":               {},
	"envoy.config.listener.v3.ListenerFilterChainMatchPredicate.and_match":              {},
	"envoy.config.listener.v3.ListenerFilterChainMatchPredicate.not_match":              {},
	"envoy.config.listener.v3.ListenerFilterChainMatchPredicate.any_match":              {},
	"envoy.config.listener.v3.ListenerFilterChainMatchPredicate.destination_port_range": {},
	"envoy.config.listener.v3.ListenerFilterChainMatchPredicate.MatchSet.rules":         {},
	"envoy.config.listener.v3.ListenerFilter.typed_config":                              {category: "envoy.filters.listener", categories: []string{"envoy.filters.udp_listener"}, byName: true},
	// envoy.filters.listener.proxy_protocol: rules put TLVs in the
	// connection's dynamic metadata, pass_through_tlvs keeps them for the
	// upstream PROXY header; tlv_location FILTER_STATE is not implemented.
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.allow_requests_without_proxy_protocol": {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.disallowed_versions":                   {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.stat_prefix":                           {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.rules":                                 {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.pass_through_tlvs":                     {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.tlv_location":                          {values: []string{"DYNAMIC_METADATA"}},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.Rule.tlv_type":                         {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.Rule.on_tlv_present":                   {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.KeyValuePair.metadata_namespace":       {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.KeyValuePair.key":                      {},
	"envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol.KeyValuePair.value_string_encoding":    {},

	// Filter chains.
	"envoy.config.listener.v3.FilterChain.filter_chain_match": {},
	"envoy.config.listener.v3.FilterChain.filters":            {},
	"envoy.config.listener.v3.FilterChain.name":               {},
	"envoy.config.listener.v3.Filter.name":                    {},
	"envoy.config.listener.v3.Filter.typed_config":            {category: "envoy.filters.network"},

	// Filter chain matching: the criteria a plain TCP listener can see
	// (server_names, transport_protocol and application_protocols are in
	// support_tls.go).
	"envoy.config.listener.v3.FilterChainMatch.destination_port":            {},
	"envoy.config.listener.v3.FilterChainMatch.prefix_ranges":               {},
	"envoy.config.listener.v3.FilterChainMatch.direct_source_prefix_ranges": {},
	"envoy.config.listener.v3.FilterChainMatch.source_type":                 {},
	"envoy.config.listener.v3.FilterChainMatch.source_prefix_ranges":        {},
	"envoy.config.listener.v3.FilterChainMatch.source_ports":                {},
	"envoy.config.core.v3.CidrRange.address_prefix":                         {},
	"envoy.config.core.v3.CidrRange.prefix_len":                             {},
}
