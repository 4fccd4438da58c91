package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// notInEnvoy is the refusal of a field Envoy declares but does not
// implement ([#not-implemented-hide:] in its protos).
const notInEnvoy = "not implemented by Envoy either (not yet implemented there), so not supported by Outrigger"

// notInEnvoyUHV refuses the header validator (UHV) slots: hidden as not
// implemented in Envoy's protos and compiled out of its builds unless
// ENVOY_ENABLE_UHV is defined. The checks envoy_default would configure
// are the connection manager's own options here.
const notInEnvoyUHV = notInEnvoy + " (Envoy's header validators are compiled out of its builds unless ENVOY_ENABLE_UHV " +
	"is defined, and its release binaries refuse the field: \"This Envoy binary does not support header validator " +
	"extensions\"); normalize_path, merge_slashes, path_with_escaped_slashes_action, headers_with_underscores_action " +
	"and allow_chunked_length configure the same checks"

// droppedByConversion refuses the fields of a core RetryPolicy that
// Envoy's conversion to a route retry policy (convertCoreToRouteRetryPolicy)
// does not carry over.
const droppedByConversion = "not supported by Outrigger: Envoy's conversion of a core RetryPolicy to the retry policy " +
	"of its asynchronous client drops it, so it has no effect there either"

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
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.typed_header_validation_config": notInEnvoyUHV,
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.header_validation_config":                                  notInEnvoyUHV,
	"envoy.config.route.v3.RetryPolicy.retry_options_predicates": "not supported by Outrigger: Envoy has no built-in " +
		"retry options predicate (the envoy.retry_options_predicates category holds none), so none could be configured",
	// Where a core RetryPolicy is read (ext_authz's HTTP service, remote
	// JWKS, gRPC services), Envoy converts it to a route retry policy
	// retrying on 5xx,gateway-error,connect-failure,reset, and the
	// conversion drops these: accepting them would promise an effect
	// they have nowhere.
	"envoy.config.core.v3.RetryPolicy.retry_host_predicate":              droppedByConversion,
	"envoy.config.core.v3.RetryPolicy.retry_priority":                    droppedByConversion,
	"envoy.config.core.v3.RetryPolicy.host_selection_retry_max_attempts": droppedByConversion,
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.format": "not supported by Outrigger yet: " +
		"x-forwarded-client-cert is written in its text format only (TEXT, the default); the JSON format Envoy added in 2026 " +
		"is not implemented, its layout was not available to check Outrigger's output against",
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.outlier_detection": "not supported by Outrigger yet: " +
		"outlier detection counts the 5xx responses of a cluster's hosts; an error_matcher deciding which responses " +
		"count instead is not implemented",
}
