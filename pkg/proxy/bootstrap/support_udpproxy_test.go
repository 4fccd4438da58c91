package bootstrap

import "testing"

// TestValidateUDPProxyTunnel: every field of the UDP proxy's
// tunneling_config, and flush_access_log_on_tunnel_connected, passes the
// support tables (pkg/proxy/filters/udp/udpproxy checks their values).
func TestValidateUDPProxyTunnel(t *testing.T) {
	const udp = `
static_resources:
  listeners:
  - name: u
    address: {socket_address: {protocol: UDP, address: 127.0.0.1, port_value: 10000}}
    listener_filters:
    - name: envoy.filters.udp_listener.udp_proxy
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig
        stat_prefix: u
        matcher: {on_no_match: {action: {name: route, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route, cluster: c}}}}
        access_log_options: {flush_access_log_on_tunnel_connected: true}
        tunneling_config:
          proxy_host: p
          proxy_port: 443
          target_host: t
          default_target_port: 53
          use_post: true
          post_path: /udp
          retry_options: {max_connect_attempts: 2, backoff_options: {base_interval: 0.1s, max_interval: 1s}}
          headers_to_add: [{header: {key: x-a, value: "%UPSTREAM_CLUSTER%"}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}]
          buffer_options: {max_buffered_datagrams: 8, max_buffered_bytes: 4096}
          propagate_response_headers: true
          propagate_response_trailers: true
          formatters: [{name: envoy.formatter.req_without_query, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery}}]
  clusters:
  - name: c
    load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 10001}}}}]}]}
`
	runValidateCases(t, map[string]validateCase{
		"tunneling_config": {overlay: udp, standalone: true},
	})
}
