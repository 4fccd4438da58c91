package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedHCM lists the HTTP connection manager and HTTP filter fields Outrigger implements (see supportedCore).
var supportedHCM = map[protoreflect.FullName]fieldSupport{
	// HTTP connection manager.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.stat_prefix":  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.codec_type":   {values: []string{"AUTO", "HTTP1", "HTTP2"}},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.route_config": {},
	// Routes over the ADS stream (the semantic check requires ads: {}).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.rds":                          {},
	"envoy.extensions.filters.network.http_connection_manager.v3.Rds.config_source":                                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.Rds.route_config_name":                              {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.http_filters":                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.access_log":                   {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.server_name":                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.server_header_transformation": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.via":                          {},
	// x-forwarded-client-cert: every mode, and the details set with
	// APPEND_FORWARD and SANITIZE_SET (forward_client_cert_matcher in
	// support_xfcc_matcher.go).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.forward_client_cert_details":         {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.set_current_client_cert_details":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.subject": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.cert":    {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.chain":   {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.dns":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.uri":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.use_remote_address":                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.xff_num_trusted_hops":                {},
	// Original IP detection extensions, without use_remote_address
	// (pkg/proxy/ipdetection; refused beside it, as in Envoy).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.original_ip_detection_extensions": {},
	"envoy.extensions.http.original_ip_detection.xff.v3.XffConfig.xff_num_trusted_hops":                                  {},
	"envoy.extensions.http.original_ip_detection.xff.v3.XffConfig.xff_trusted_cidrs":                                     {},
	"envoy.extensions.http.original_ip_detection.xff.v3.XffTrustedCidrs.cidrs":                                           {},
	// true only: false is refused by the extension.
	"envoy.extensions.http.original_ip_detection.xff.v3.XffConfig.skip_xff_append":                                              {},
	"envoy.extensions.http.original_ip_detection.custom_header.v3.CustomHeaderConfig.header_name":                               {},
	"envoy.extensions.http.original_ip_detection.custom_header.v3.CustomHeaderConfig.allow_extension_to_set_address_as_trusted": {},
	"envoy.extensions.http.original_ip_detection.custom_header.v3.CustomHeaderConfig.reject_with_status":                        {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.skip_xff_append":                         {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.generate_request_id":                     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.always_set_request_id_in_response":       {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.stream_idle_timeout":                     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.request_timeout":                         {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.request_headers_timeout":                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.drain_timeout":                           {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.delayed_close_timeout":                   {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.max_request_headers_kb":                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.common_http_protocol_options":            {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.http_protocol_options":                   {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.http2_protocol_options":                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.preserve_external_request_id":            {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.internal_address_config":                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.path_with_escaped_slashes_action":        {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.normalize_path":                          {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.merge_slashes":                           {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.strip_matching_host_port":                {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.strip_any_host_port":                     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.strip_trailing_host_dot":                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.add_user_agent":                          {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.append_x_forwarded_port":                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.proxy_100_continue":                      {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.append_local_overload":                   {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.InternalAddressConfig.unix_sockets":      {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.InternalAddressConfig.cidr_ranges":       {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.local_reply_config":                      {},
	"envoy.extensions.filters.network.http_connection_manager.v3.LocalReplyConfig.mappers":                                      {},
	"envoy.extensions.filters.network.http_connection_manager.v3.LocalReplyConfig.body_format":                                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper.filter":                                         {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper.status_code":                                    {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper.body":                                           {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper.body_format_override":                           {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ResponseMapper.headers_to_add":                                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.name":                                               {},
	// HttpFilter also makes the upstream chains, where upstream_codec
	// (envoy.filters.http.upstream) ends the list.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.typed_config": {category: "envoy.filters.http", categories: []string{"envoy.filters.http.upstream"}, byName: true},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.disabled":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.is_optional":  {},

	// access_log_options, and the deprecated top-level fields it replaced.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.access_log_options":                                               {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.access_log_flush_interval":                                        {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.flush_access_log_on_new_request":                                  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.HcmAccessLogOptions.access_log_flush_interval":                    {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.HcmAccessLogOptions.flush_access_log_on_new_request":              {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.HcmAccessLogOptions.flush_log_on_tunnel_successfully_established": {},

	// The scheme of requests. Upstreams are plaintext, so the :scheme
	// sent upstream is always http, what match_upstream asks for.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.scheme_header_transformation": {},
	"envoy.config.core.v3.SchemeHeaderTransformation.scheme_to_overwrite":                                            {},
	"envoy.config.core.v3.SchemeHeaderTransformation.match_upstream":                                                 {},

	// Protocol options read by the connection manager. idle_timeout and
	// max_requests_per_connection of HttpProtocolOptions are listed with
	// the clusters', which share the message; clusters refuse
	// max_headers_count and max_connection_duration (pkg/proxy/cluster,
	// downstreamOnlyFields).
	"envoy.config.core.v3.HttpProtocolOptions.max_headers_count": {},
	// Clusters refuse it (pkg/proxy/cluster, downstreamOnlyFields).
	"envoy.config.core.v3.HttpProtocolOptions.headers_with_underscores_action": {},
	"envoy.config.core.v3.HttpProtocolOptions.max_connection_duration":         {},
	// A random share of the duration, per connection (jitter.go); clusters
	// refuse it with max_connection_duration.
	"envoy.config.core.v3.HttpProtocolOptions.max_connection_duration_jitter":                                {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.drain_timeout_jitter": {},
	// An idle HTTP/1 connection past max_connection_duration waits for its
	// next request (answered with connection: close); conn.go.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.http1_safe_max_connection_duration": {},
	"envoy.config.core.v3.Http1ProtocolOptions.accept_http_10":                                                             {},
	"envoy.config.core.v3.Http1ProtocolOptions.default_host_for_http_10":                                                   {},

	// Requests with both Content-Length and chunked framing, and whether a
	// 400 local reply closes an HTTP/1 connection (the HTTP/1 override of
	// stream_error_on_invalid_http_message); clusters refuse both
	// (pkg/proxy/cluster, downstreamOnlyFields).
	"envoy.config.core.v3.Http1ProtocolOptions.allow_chunked_length":                          {},
	"envoy.config.core.v3.Http1ProtocolOptions.enable_trailers":                               {},
	"envoy.config.core.v3.Http1ProtocolOptions.override_stream_error_on_invalid_http_message": {},
	// allow_absolute_url: false keeps an absolute-form target whole as the
	// path, which is then refused (404, absolute_path_rejected); true is
	// the default. allow_custom_methods: true is what Outrigger's parser
	// does whatever the value (any token method; docs/compat.md). Both
	// are for client connections only (clusters refuse them).
	"envoy.config.core.v3.Http1ProtocolOptions.allow_absolute_url":   {},
	"envoy.config.core.v3.Http1ProtocolOptions.allow_custom_methods": {},
	// Envoy's choice between its two HTTP/1 parsers, which parse the same
	// protocol; Outrigger has one, used whatever the value.
	"envoy.config.core.v3.Http1ProtocolOptions.use_balsa_parser": {},
	// The absolute-form request target on a cluster's connections
	// (absoluteform.go); like Envoy's, it has no effect on client
	// connections.
	"envoy.config.core.v3.Http1ProtocolOptions.send_fully_qualified_url": {},
	// Upgrade values served as plain requests (ignore_upgrade.go); client
	// connections only (clusters refuse it).
	"envoy.config.core.v3.Http1ProtocolOptions.ignore_http_11_upgrade": {},

	// Proper-case field names, on client and upstream connections alike,
	// and the preserve_case stateful formatter (the only one Envoy has;
	// upstream.HTTP1Format reads it, pkg/proxy/httpconn/preserve_case.go
	// applies it).
	"envoy.config.core.v3.Http1ProtocolOptions.header_key_format":                                                          {},
	"envoy.config.core.v3.Http1ProtocolOptions.HeaderKeyFormat.proper_case_words":                                          {},
	"envoy.config.core.v3.Http1ProtocolOptions.HeaderKeyFormat.stateful_formatter":                                         {},
	"envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig.forward_reason_phrase":           {},
	"envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig.formatter_type_on_envoy_headers": {},
	// The downstream HTTP/2 server's limits.
	// connection_keepalive: PINGs to clients (h2keepalive.go) and to
	// upstreams (the cluster's transport; no jitter there).
	"envoy.config.core.v3.Http2ProtocolOptions.connection_keepalive":   {},
	"envoy.config.core.v3.KeepaliveSettings.interval":                  {},
	"envoy.config.core.v3.KeepaliveSettings.timeout":                   {},
	"envoy.config.core.v3.KeepaliveSettings.interval_jitter":           {},
	"envoy.config.core.v3.Http2ProtocolOptions.max_concurrent_streams": {},
	// Envoy's choice between its two HTTP/2 codecs (nghttp2, oghttp2),
	// which speak the same protocol; Outrigger has one of its own
	// (clients) and Go's (upstreams), used whatever the value.
	"envoy.config.core.v3.Http2ProtocolOptions.use_oghttp2_codec":              {},
	"envoy.config.core.v3.Http2ProtocolOptions.initial_stream_window_size":     {},
	"envoy.config.core.v3.Http2ProtocolOptions.initial_connection_window_size": {},
	// HPACK and SETTINGS (h2custom.go, h2hpack.go): the table size
	// announced (and, upstream, the encoder's bound), Huffman coding of
	// the response heads, the wire size of a request field, and the
	// custom SETTINGS parameters with Envoy's rules. Clusters refuse all
	// but hpack_table_size (pkg/proxy/cluster, downstreamOnlyHTTP2Fields).
	"envoy.config.core.v3.Http2ProtocolOptions.hpack_table_size":             {},
	"envoy.config.core.v3.Http2ProtocolOptions.enable_huffman_encoding":      {},
	"envoy.config.core.v3.Http2ProtocolOptions.max_header_field_size_kb":     {},
	"envoy.config.core.v3.Http2ProtocolOptions.custom_settings_parameters":   {},
	"envoy.config.core.v3.Http2ProtocolOptions.SettingsParameter.identifier": {},
	"envoy.config.core.v3.Http2ProtocolOptions.SettingsParameter.value":      {},
	// The RST_STREAM token bucket of client connections (h2resetrate.go);
	// like Envoy's, it has no effect on a cluster's (client-side)
	// connections.
	"envoy.config.core.v3.Http2ProtocolOptions.stream_reset_burst": {},
	"envoy.config.core.v3.Http2ProtocolOptions.stream_reset_rate":  {},
	// Request field values with obs-text are malformed (h2stream.go);
	// clusters refuse it (Go's transport takes them).
	"envoy.config.core.v3.Http2ProtocolOptions.disallow_obs_text": {},
	// Its flood limits and the answer to malformed requests.
	"envoy.config.core.v3.Http2ProtocolOptions.max_outbound_frames":                                  {},
	"envoy.config.core.v3.Http2ProtocolOptions.max_outbound_control_frames":                          {},
	"envoy.config.core.v3.Http2ProtocolOptions.max_consecutive_inbound_frames_with_empty_payload":    {},
	"envoy.config.core.v3.Http2ProtocolOptions.max_inbound_priority_frames_per_stream":               {},
	"envoy.config.core.v3.Http2ProtocolOptions.max_inbound_window_update_frames_per_data_frame_sent": {},
	"envoy.config.core.v3.Http2ProtocolOptions.stream_error_on_invalid_http_messaging":               {},
	"envoy.config.core.v3.Http2ProtocolOptions.override_stream_error_on_invalid_http_message":        {},

	// HTTP/1: a 400 local reply keeps the connection open; HTTP/2: the
	// default of override_stream_error_on_invalid_http_message.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.stream_error_on_invalid_http_message": {},

	// The router filter (envoy.extensions.filters.http.router.v3.Router)
	// is supported with none of its fields set, so it has no lines.

	// The health_check filter. Its headers are route HeaderMatchers,
	// listed with the routes'.
	"envoy.extensions.filters.http.health_check.v3.HealthCheck.pass_through_mode": {},
	"envoy.extensions.filters.http.health_check.v3.HealthCheck.headers":           {},
	// cache_time (pass-through mode) and cluster_min_healthy_percentages
	// (pkg/proxy/filters/http/healthcheck).
	"envoy.extensions.filters.http.health_check.v3.HealthCheck.cache_time":                      {},
	"envoy.extensions.filters.http.health_check.v3.HealthCheck.cluster_min_healthy_percentages": {},
}
