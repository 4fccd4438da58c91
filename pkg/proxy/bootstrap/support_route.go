package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedRoute lists the route configuration fields Outrigger implements (see supportedCore).
var supportedRoute = map[protoreflect.FullName]fieldSupport{
	// Routes.
	"envoy.config.route.v3.RouteConfiguration.name":          {},
	"envoy.config.route.v3.RouteConfiguration.virtual_hosts": {},
	"envoy.config.route.v3.VirtualHost.name":                 {},
	"envoy.config.route.v3.VirtualHost.domains":              {},
	"envoy.config.route.v3.VirtualHost.routes":               {},
	"envoy.config.route.v3.Route.name":                       {},
	"envoy.config.route.v3.Route.match":                      {},
	"envoy.config.route.v3.Route.direct_response":            {},
	"envoy.config.route.v3.RouteMatch.prefix":                {},
	"envoy.config.route.v3.RouteMatch.path":                  {},
	"envoy.config.route.v3.DirectResponseAction.status":      {},
	"envoy.config.route.v3.DirectResponseAction.body":        {},
	"envoy.config.core.v3.DataSource.inline_string":          {},
}
