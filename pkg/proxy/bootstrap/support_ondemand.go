package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedOnDemand lists the on-demand cluster discovery fields Outrigger
// implements: tcp_proxy's on_demand and the on_demand HTTP filter's odcds
// (filter-wide and per route), over the delta ADS stream (the filters
// require a source of ads: {} and a DELTA_GRPC ads_config).
// resources_locator (xdstp://) stays refused with its path.
var supportedOnDemand = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.on_demand":             {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.OnDemand.odcds_config": {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.OnDemand.timeout":      {},

	"envoy.extensions.filters.http.on_demand.v3.OnDemand.odcds":       {},
	"envoy.extensions.filters.http.on_demand.v3.PerRouteConfig.odcds": {},
	"envoy.extensions.filters.http.on_demand.v3.OnDemandCds.source":   {},
	"envoy.extensions.filters.http.on_demand.v3.OnDemandCds.timeout":  {},
}
