package bootstrap

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// loadStatsConfig checks cluster_manager.load_stats_config as Envoy's
// cluster manager does (factoryForGrpcApiConfigSource): load reports go
// over a gRPC stream (api_type GRPC or DELTA_GRPC, which mean the same
// stream here), to one envoy_grpc service, with the V3 transport. The
// xDS-only fields, which Envoy's load reporter never reads, are refused
// rather than silently ignored. The server checks the cluster named.
func (s *semanticChecker) loadStatsConfig(api *corev3.ApiConfigSource) {
	const path = "cluster_manager.load_stats_config"
	if api == nil {
		return
	}
	if api.GetApiType() == corev3.ApiConfigSource_REST {
		s.fail(childPath(path, "api_type"), "REST cannot carry load reports: GRPC is required (Envoy: ApiConfigSource type must be gRPC)")
		if api.GetTransportApiVersion() != corev3.ApiVersion_V3 {
			s.fail(childPath(path, "transport_api_version"), "must be V3 (Envoy refuses the AUTO and V2 transports)")
		}
		return
	}
	s.apiConfigSource(api, path, false)
	if api.GetSetNodeOnFirstMessageOnly() {
		s.fail(childPath(path, "set_node_on_first_message_only"), "not supported by Outrigger: every load report carries the node (Envoy's load reporter ignores the field)")
	}
	if api.GetRateLimitSettings() != nil {
		s.fail(childPath(path, "rate_limit_settings"), "not supported by Outrigger: load reports are paced by the server's load_reporting_interval (Envoy's load reporter ignores the field)")
	}
}
