package bootstrap

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// LoadStatsConfigProblems checks cluster_manager.load_stats_config as
// Envoy's cluster manager does (factoryForGrpcApiConfigSource), returning
// each problem with its path below it: load reports go over a gRPC
// stream (api_type GRPC or DELTA_GRPC, which mean the same stream here),
// to one service (envoy_grpc, or google_grpc as Envoy's gRPC client
// takes it), with the V3 transport. The xDS-only fields, which Envoy's
// load reporter never reads, are refused rather than silently ignored.
// The server checks the service it names.
func LoadStatsConfigProblems(api *corev3.ApiConfigSource) []*FieldError {
	var errs []*FieldError
	fail := func(path, format string, args ...any) { errs = append(errs, fieldErrorf(path, format, args...)) }
	switch api.GetApiType() {
	case corev3.ApiConfigSource_REST:
		fail("api_type", "REST cannot carry load reports: GRPC is required (Envoy: ApiConfigSource type must be gRPC)")
	case 0: // unset: the enum's zero is a deprecated placeholder
		fail("api_type", "GRPC or DELTA_GRPC is required")
	}
	if api.GetTransportApiVersion() != corev3.ApiVersion_V3 {
		fail("transport_api_version", "must be V3 (Envoy refuses the AUTO and V2 transports)")
	}
	if api.GetApiType() != corev3.ApiConfigSource_REST {
		grpcSourceProblems(api, true, fail)
	}
	if api.GetSetNodeOnFirstMessageOnly() {
		fail("set_node_on_first_message_only", "not supported by Outrigger: every load report carries the node (Envoy's load reporter ignores the field)")
	}
	if api.GetRateLimitSettings() != nil {
		fail("rate_limit_settings", "not supported by Outrigger: load reports are paced by the server's load_reporting_interval (Envoy's load reporter ignores the field)")
	}
	return errs
}

// loadStatsConfig checks cluster_manager.load_stats_config (see
// LoadStatsConfigProblems).
func (s *semanticChecker) loadStatsConfig(api *corev3.ApiConfigSource) {
	if api == nil {
		return
	}
	for _, p := range LoadStatsConfigProblems(api) {
		s.fail(childPath("cluster_manager.load_stats_config", p.Path), "%s", p.Reason)
	}
}
