package bootstrap

import "testing"

// TestValidateTCPProxyIdleTimeouts: the per-side idle timeouts, which
// Envoy declares but does not implement, load with their documented
// meaning (pkg/proxy/filters/network/tcpproxy checks their values); the fields
// Outrigger implements now load.
func TestValidateTCPProxyIdleTimeouts(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"per-side idle timeouts": {
			overlay: listenerYAML("", `{name: tcp, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: backend, downstream_idle_timeout: 1s, upstream_idle_timeout: 0s}}`),
		},
		"implemented fields": {
			overlay: listenerYAML("", `{name: tcp, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: backend, check_drain_close: true, tunneling_config: {hostname: h, propagate_response_headers: true, propagate_response_trailers: true, request_id_header: x-id, request_id_metadata_key: k, request_id_extension: {typed_config: {"@type": type.googleapis.com/envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig}}, formatters: [{name: envoy.formatter.req_without_query, typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery}}]}}}`),
		},
	})
}
