package bootstrap

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// APIConfigSourceProblems checks an api_config_source as Envoy's
// subscription factory does, returning each problem with its path below
// the api_config_source: a gRPC stream (GRPC or DELTA_GRPC, exactly one
// envoy_grpc service, no cluster_names) or, when rest is true (a
// resource type's own config source, not the ADS stream), REST polling
// (exactly one cluster name, a refresh delay, no gRPC service); the V3
// transport either way. The fields only one transport reads are refused
// on the other rather than ignored. The server checks the clusters named.
func APIConfigSourceProblems(api *corev3.ApiConfigSource, rest bool) []*FieldError {
	var errs []*FieldError
	fail := func(path, format string, args ...any) { errs = append(errs, fieldErrorf(path, format, args...)) }
	t := api.GetApiType()
	switch {
	case t == corev3.ApiConfigSource_REST && !rest:
		fail("api_type", "REST cannot carry the aggregated stream: GRPC or DELTA_GRPC is required")
	case t == 0 && rest: // unset: the enum's zero is a deprecated placeholder
		fail("api_type", "GRPC, DELTA_GRPC or REST is required")
	case t == 0:
		fail("api_type", "GRPC or DELTA_GRPC is required")
	}
	if api.GetTransportApiVersion() != corev3.ApiVersion_V3 {
		fail("transport_api_version", "must be V3 (Envoy refuses the AUTO and V2 transports)")
	}
	// The support table refuses the other api types by name; their
	// fields are checked as a gRPC stream's.
	if t == corev3.ApiConfigSource_REST {
		if rest {
			restSourceProblems(api, fail)
		}
	} else {
		grpcSourceProblems(api, false, fail)
	}
	return errs
}

// grpcSourceProblems checks the fields of a gRPC api_config_source;
// google is whether a google_grpc service may stand for the envoy_grpc
// one (load reports: Envoy's gRPC client factory takes either).
func grpcSourceProblems(api *corev3.ApiConfigSource, google bool, fail func(path, format string, args ...any)) {
	switch n := len(api.GetGrpcServices()); {
	case n == 0:
		fail("grpc_services", "one gRPC service is required")
	case n > 1:
		fail("grpc_services", "only one gRPC service is supported (Envoy: only singleton gRPC service lists supported)")
	}
	for i, gs := range api.GetGrpcServices() {
		if gs.GetEnvoyGrpc() == nil && (!google || gs.GetGoogleGrpc() == nil) {
			fail(indexPath("grpc_services", i), "an envoy_grpc service naming a static cluster is required: google_grpc is not supported for xDS by Outrigger")
		}
	}
	if len(api.GetClusterNames()) > 0 {
		fail("cluster_names", "a gRPC config source must not have a cluster name specified (its gRPC service names the cluster)")
	}
	if api.GetRefreshDelay() != nil {
		fail("refresh_delay", "only REST config sources poll: a gRPC stream has no use for it")
	}
	if api.GetRequestTimeout() != nil {
		fail("request_timeout", "only REST config sources send requests that time out: a gRPC stream has no use for it")
	}
}

// restSourceProblems checks the fields of a REST api_config_source.
func restSourceProblems(api *corev3.ApiConfigSource, fail func(path, format string, args ...any)) {
	if len(api.GetGrpcServices()) > 0 {
		fail("grpc_services", "a config source that is not of a gRPC type must not have a gRPC service specified")
	}
	if len(api.GetClusterNames()) != 1 {
		fail("cluster_names", "must have a singleton cluster name specified")
	}
	if d := api.GetRefreshDelay(); d == nil {
		fail("refresh_delay", "required for REST API configuration sources")
	} else if d.AsDuration() <= 0 {
		fail("refresh_delay", "must be above 0s")
	}
	if api.GetSetNodeOnFirstMessageOnly() {
		fail("set_node_on_first_message_only", "gRPC streams only: every REST request carries the node")
	}
	if api.GetRateLimitSettings() != nil {
		fail("rate_limit_settings", "gRPC streams only: REST requests are paced by refresh_delay")
	}
}
