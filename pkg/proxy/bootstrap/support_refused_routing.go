package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// notInEnvoy is the refusal of a field Envoy declares but does not
// implement ([#not-implemented-hide:] in its protos).
const notInEnvoy = "not implemented by Envoy either (not yet implemented there), so not supported by Outrigger"

// refusedRouting says why some routing, retry and connection manager
// fields are refused: Envoy does not implement them, or Outrigger has no
// way to do what Envoy does with them.
var refusedRouting = map[protoreflect.FullName]string{
	// The typed retry policy extension point, the filter-defined route
	// action and the header validators (UHV) are declared but hidden as
	// not implemented in Envoy's protos.
	"envoy.config.route.v3.RouteAction.retry_policy_typed_config":                                                      notInEnvoy,
	"envoy.config.route.v3.VirtualHost.retry_policy_typed_config":                                                      notInEnvoy,
	"envoy.config.route.v3.Route.filter_action":                                                                        notInEnvoy,
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.typed_header_validation_config": notInEnvoy,
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.header_validation_config":                                  notInEnvoy,
	"envoy.config.route.v3.RetryPolicy.retry_options_predicates": "not supported by Outrigger: Envoy has no built-in " +
		"retry options predicate (the envoy.retry_options_predicates category holds none), so none could be configured",
	// Where a core RetryPolicy is read (ext_authz's HTTP service, remote
	// JWKS, gRPC services), the tries are made by a client of their own,
	// which picks its hosts outside the router's retry host selection.
	"envoy.config.core.v3.RetryPolicy.retry_host_predicate": "not supported by Outrigger: the clients that read a core " +
		"RetryPolicy (ext_authz's HTTP service, remote JWKS, gRPC services) retry through their own connection, " +
		"outside the router's retry host selection, so no host predicate can steer their tries",
	"envoy.config.core.v3.RetryPolicy.retry_priority": "not supported by Outrigger: the clients that read a core " +
		"RetryPolicy (ext_authz's HTTP service, remote JWKS, gRPC services) retry through their own connection, " +
		"outside the router's retry host selection, so no retry priority can steer their tries",
	"envoy.config.core.v3.RetryPolicy.host_selection_retry_max_attempts": "not supported by Outrigger: the clients that " +
		"read a core RetryPolicy (ext_authz's HTTP service, remote JWKS, gRPC services) retry through their own " +
		"connection, outside the router's retry host selection, which this bounds",
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.outlier_detection": "not supported by Outrigger yet: " +
		"outlier detection counts the 5xx responses of a cluster's hosts; an error_matcher deciding which responses " +
		"count instead is not implemented",
}
