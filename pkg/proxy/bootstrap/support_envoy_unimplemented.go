package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// envoyUnimplemented lists fields Envoy's API declares but Envoy itself
// does not implement ([#not-implemented-hide:] in its protos): Outrigger
// refuses them too, saying so, so that a configuration that relies on
// them learns it would not work under Envoy either.
var envoyUnimplemented = map[protoreflect.FullName]struct{}{
	// xDS-TP resolution and its context parameters.
	"envoy.config.bootstrap.v3.Bootstrap.node_context_params":   {},
	"envoy.config.bootstrap.v3.Bootstrap.config_sources":        {},
	"envoy.config.bootstrap.v3.Bootstrap.default_config_source": {},
	// The connection manager's path transformations and IPv4-mapped
	// remote addresses: declared, never wired into Envoy's connection
	// manager (normalize_path and merge_slashes are what it applies).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.path_normalization_options":                        {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.represent_ipv4_remote_address_as_ipv4_mapped_ipv6": {},
	// ext_proc's per-route asynchronous mode: deprecated, never read.
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.async_mode": {},
}

// envoyUnimplementedDetail says more about some envoyUnimplemented
// fields: what Envoy does instead.
var envoyUnimplementedDetail = map[protoreflect.FullName]string{
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.path_normalization_options": ": " +
		"PathNormalizationOptions (forwarding_transformation, http_filter_transformation) is hidden as not implemented in " +
		"Envoy's API and no code of Envoy's connection manager reads it; normalize_path, merge_slashes and " +
		"path_with_escaped_slashes_action are the path transformations Envoy applies, and Outrigger implements them",
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.represent_ipv4_remote_address_as_ipv4_mapped_ipv6": ": " +
		"hidden as not implemented in Envoy's API and read by no code of Envoy's: x-forwarded-for and " +
		"x-envoy-external-address carry an IPv4 remote address as IPv4 there, as in Outrigger",
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.async_mode": ": " +
		"deprecated and hidden as not implemented in Envoy's API, read by no code of Envoy's ext_proc filter; " +
		"observability_mode is the filter's asynchronous mode",
}

// unsupportedReason is the refusal of a populated field missing from the
// support tables.
func unsupportedReason(name protoreflect.FullName) string {
	if why, ok := refusedTLS[name]; ok {
		return why
	}
	if why, ok := refusedWhy[name]; ok {
		return why
	}
	if why, ok := refusedRouting[name]; ok {
		return why
	}
	if why, ok := refusedTail[name]; ok {
		return why
	}
	if _, ok := envoyUnimplemented[name]; ok {
		return "not implemented by Envoy either (not yet implemented there), so not supported by Outrigger" + envoyUnimplementedDetail[name]
	}
	return "not supported by Outrigger"
}
