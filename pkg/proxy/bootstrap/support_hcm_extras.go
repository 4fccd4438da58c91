package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedHCMExtras lists connection manager and route fields added in
// one piece of work (flush timeouts, Proxy-Status); see supportedCore.
var supportedHCMExtras = map[protoreflect.FullName]fieldSupport{
	// How long an HTTP/2 stream whose response has all been produced may
	// wait on the client's window, and its per-route override
	// (pkg/proxy/httpconn, flush_timeout.go); HTTP/1 has no such wait, as
	// in Envoy's codec.
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.stream_flush_timeout": {},
	"envoy.config.route.v3.RouteAction.flush_timeout":                                                        {},
	// The Proxy-Status response field (pkg/proxy/httpconn, proxystatus.go).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.proxy_status_config":                                     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ProxyStatusConfig.remove_details":                        {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ProxyStatusConfig.remove_connection_termination_details": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ProxyStatusConfig.remove_response_flags":                 {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ProxyStatusConfig.set_recommended_response_code":         {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ProxyStatusConfig.use_node_id":                           {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ProxyStatusConfig.literal_proxy_name":                    {},
	// Spans reported, no trace context injected upstream
	// (pkg/proxy/httpconn, tracing.go injectTrace).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.Tracing.no_context_propagation": {},
	// Two per-stream histograms (pkg/proxy/httpconn, route_resolution.go).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.record_route_resolution_stats": {},
	// The downstream side of upstream PROXY headers (pkg/proxy/httpconn,
	// ppstate.go).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.add_proxy_protocol_connection_state": {},
	// x-forwarded-proto from a restored destination port
	// (pkg/proxy/httpconn, forward_proto.go).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.forward_proto_config": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ForwardProtoConfig.https_destination_ports": {},
	"envoy.extensions.filters.network.http_connection_manager.v3.ForwardProtoConfig.http_destination_ports":  {},
	// The client certificate's issuer in x-forwarded-client-cert
	// (pkg/proxy/httpconn, xfcc.go).
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.SetCurrentClientCertDetails.issuer": {},
}
