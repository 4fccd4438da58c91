package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedOnDemand lists the on-demand cluster discovery fields Outrigger
// implements: tcp_proxy's on_demand, over the delta ADS stream (the
// filter requires odcds_config: {ads: {}} and a DELTA_GRPC ads_config).
// resources_locator (xdstp://) stays refused with its path.
var supportedOnDemand = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.on_demand":             {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.OnDemand.odcds_config": {},
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.OnDemand.timeout":      {},
}
