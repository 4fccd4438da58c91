package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedHCM lists the HTTP connection manager and HTTP filter fields Outrigger implements (see supportedCore).
var supportedHCM = map[protoreflect.FullName]fieldSupport{
	// HTTP connection manager.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.stat_prefix":  {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.codec_type":   {values: []string{"AUTO", "HTTP1", "HTTP2"}},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.route_config": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.http_filters": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.name":                    {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.typed_config":            {category: "envoy.filters.http"},

	// The router filter (envoy.extensions.filters.http.router.v3.Router)
	// is supported with none of its fields set, so it has no lines.
}
