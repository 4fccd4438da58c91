package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedExtAuthz lists the fields of envoy.filters.http.ext_authz that
// Outrigger implements (see supportedCore), and of its per-route
// ExtAuthzPerRoute. The HTTP service's retry_policy
// is read as Envoy converts it (its retry_on, which that drops, is
// refused by the filter).
// The filter's Compile refuses transport_api_version V2.
//
// The network filter, envoy.filters.network.ext_authz, has its own
// fields below. Not listed, so refused with its path:
// send_tls_alert_on_denial (see refusedWhy).
var supportedExtAuthz = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.stat_prefix":              {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.grpc_service":             {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.failure_mode_allow":       {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.include_peer_certificate": {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.include_tls_session":      {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.transport_api_version":    {values: []string{"AUTO", "V3"}},
	// Matched against the connection's dynamic metadata (the listener
	// filters').
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.filter_enabled_metadata":       {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.bootstrap_metadata_labels_key": {},
	// Namespaces of the connection's dynamic metadata; no Outrigger
	// filter sets typed metadata, so the typed namespaces find nothing,
	// as in Envoy without such a filter.
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.metadata_context_namespaces":       {},
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.typed_metadata_context_namespaces": {},
	// The decision goes to the connection's filter state.
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.shadow_mode": {},

	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.grpc_service":                  {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.http_service":                  {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.transport_api_version":         {values: []string{"AUTO", "V3"}},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.failure_mode_allow":            {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.failure_mode_allow_header_add": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.with_request_body":             {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.clear_route_cache":             {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.clear_route_cache_headers":     {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.validate_mutations":            {},
	// The HeaderMutationRules fields are listed with ext_proc's, which
	// shares them (allow_all_routing only false).
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.decoder_header_mutation_rules": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.status_on_error":               {},
	// The decision goes to the <name>.shadow filter state, never enforced.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.shadow_mode":     {},
	"envoy.extensions.filters.http.ext_authz.v3.HttpService.retry_policy": {},
	// The node metadata's labels under the key are the check's
	// destination labels.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.bootstrap_metadata_labels_key": {},
	// The namespaces of the request's dynamic metadata (RBAC's, so far)
	// go in the CheckRequest's metadata_context; no Outrigger filter sets
	// typed metadata, so the typed namespaces find nothing, as in Envoy
	// without such a filter.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.metadata_context_namespaces":       {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.typed_metadata_context_namespaces": {},
	// The route's metadata namespaces go in route_metadata_context; routes
	// carry no typed metadata (typed_filter_metadata is refused), so the
	// typed namespaces find nothing, as in Envoy for such a route.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.route_metadata_context_namespaces":       {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.route_typed_metadata_context_namespaces": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.filter_enabled":                          {},
	// filter_enabled_metadata matches the request's dynamic metadata.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.filter_enabled_metadata": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.deny_at_disable":         {},
	// The client's certificate and the SNI, on a TLS connection.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.include_peer_certificate": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.include_tls_session":      {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.stat_prefix":              {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.allowed_headers":          {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.disallowed_headers":       {},
	// Only false (Compile refuses true).
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.charge_cluster_response_stats": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.encode_raw_headers":            {},
	// Dynamic metadata from the service is not kept: nothing in Outrigger
	// reads it (see docs/compat.md).
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.enable_dynamic_metadata_ingestion": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.max_denied_response_body_bytes":    {},
	// A checked request's filter state gets Envoy's logging info: the
	// latency (%FILTER_STATE(<name>:FIELD:latency_us)%) and
	// filter_metadata, which, as in Envoy, only code reading the object
	// sees.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.emit_filter_state_stats": {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.filter_metadata":         {},
	// The service's response headers stop at the connection manager's
	// max_headers_count.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.enforce_response_header_limits": {},

	"envoy.extensions.filters.http.ext_authz.v3.BufferSettings.max_request_bytes":     {},
	"envoy.extensions.filters.http.ext_authz.v3.BufferSettings.allow_partial_message": {},
	"envoy.extensions.filters.http.ext_authz.v3.BufferSettings.pack_as_bytes":         {},

	"envoy.extensions.filters.http.ext_authz.v3.HttpService.server_uri":             {},
	"envoy.extensions.filters.http.ext_authz.v3.HttpService.path_prefix":            {},
	"envoy.extensions.filters.http.ext_authz.v3.HttpService.path_override":          {},
	"envoy.extensions.filters.http.ext_authz.v3.HttpService.authorization_request":  {},
	"envoy.extensions.filters.http.ext_authz.v3.HttpService.authorization_response": {},
	"envoy.config.core.v3.HttpUri.uri":                                              {},
	"envoy.config.core.v3.HttpUri.cluster":                                          {},
	"envoy.config.core.v3.HttpUri.timeout":                                          {},

	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationRequest.allowed_headers":                     {},
	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationRequest.headers_to_add":                      {},
	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationResponse.allowed_upstream_headers":           {},
	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationResponse.allowed_upstream_headers_to_append": {},
	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationResponse.allowed_client_headers":             {},
	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationResponse.allowed_client_headers_on_success":  {},
	"envoy.extensions.filters.http.ext_authz.v3.AuthorizationResponse.dynamic_metadata_from_headers":      {},

	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute.disabled":                    {},
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute.check_settings":              {},
	"envoy.extensions.filters.http.ext_authz.v3.CheckSettings.context_extensions":             {},
	"envoy.extensions.filters.http.ext_authz.v3.CheckSettings.disable_request_body_buffering": {},
	"envoy.extensions.filters.http.ext_authz.v3.CheckSettings.with_request_body":              {},
	// The most specific configuration's service override is asked
	// instead of the filter's service.
	"envoy.extensions.filters.http.ext_authz.v3.CheckSettings.grpc_service": {},
	"envoy.extensions.filters.http.ext_authz.v3.CheckSettings.http_service": {},
	// The span of a check with a gRPC service (filter and route); the
	// filter refuses them with an HTTP service, whose calls Outrigger
	// does not trace.
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz.emit_client_span":      {},
	"envoy.extensions.filters.http.ext_authz.v3.CheckSettings.emit_client_span": {},
	// RuntimeFeatureFlag (filter_enabled's kin) is listed with the
	// compressor's fields, which share it.
}
