package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedUpgrades lists the upgrade fields Outrigger implements:
// WebSocket (and other HTTP/1.1) upgrades and CONNECT, forwarded or
// terminated at the proxy (see docs/traffic.md, "Upgrades: WebSocket and
// CONNECT"), over HTTP/1.1 and, with allow_connect, HTTP/2 extended
// CONNECT (a cluster refuses allow_connect: pkg/proxy/cluster,
// downstreamOnlyHTTP2Fields), and an upgrade type's own filter chain
// (UpgradeConfig.filters). A terminated CONNECT's payload may start with
// a PROXY header (connect_config's proxy_protocol_config: its version;
// pkg/proxy/router refuses TLV settings, which that header cannot carry).
var supportedUpgrades = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.upgrade_configs":            {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.UpgradeConfig.upgrade_type": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.UpgradeConfig.enabled":      {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.UpgradeConfig.filters":      {},

	"envoy.config.route.v3.RouteAction.upgrade_configs":                                   {},
	"envoy.config.route.v3.RouteAction.UpgradeConfig.upgrade_type":                        {},
	"envoy.config.route.v3.RouteAction.UpgradeConfig.enabled":                             {},
	"envoy.config.route.v3.RouteAction.UpgradeConfig.connect_config":                      {},
	"envoy.config.route.v3.RouteMatch.connect_matcher":                                    {},
	"envoy.config.route.v3.RouteAction.UpgradeConfig.ConnectConfig.allow_post":            {},
	"envoy.config.route.v3.RouteAction.UpgradeConfig.ConnectConfig.proxy_protocol_config": {},
	"envoy.config.core.v3.Http2ProtocolOptions.allow_connect":                             {},
}
