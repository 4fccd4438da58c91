package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedListener lists the listener fields Outrigger implements (see supportedCore).
var supportedListener = map[protoreflect.FullName]fieldSupport{
	// Static resources: listeners.
	"envoy.config.bootstrap.v3.Bootstrap.StaticResources.listeners": {},

	// Listeners.
	"envoy.config.listener.v3.Listener.name":              {},
	"envoy.config.listener.v3.Listener.address":           {},
	"envoy.config.listener.v3.Listener.filter_chains":     {},
	"envoy.config.listener.v3.Listener.traffic_direction": {},
	"envoy.config.listener.v3.FilterChain.filters":        {},
	"envoy.config.listener.v3.FilterChain.name":           {},
	"envoy.config.listener.v3.Filter.name":                {},
	"envoy.config.listener.v3.Filter.typed_config":        {category: "envoy.filters.network"},
}
