package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedRouteTLSMatch lists a route match's tls_context: whether the
// downstream connection's client certificate was presented and validated
// (pkg/proxy/router match_tls.go).
var supportedRouteTLSMatch = map[protoreflect.FullName]fieldSupport{
	"envoy.config.route.v3.RouteMatch.tls_context":                      {},
	"envoy.config.route.v3.RouteMatch.TlsContextMatchOptions.presented": {},
	"envoy.config.route.v3.RouteMatch.TlsContextMatchOptions.validated": {},
}
