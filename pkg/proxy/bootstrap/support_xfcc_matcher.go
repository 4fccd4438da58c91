package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedXFCCMatcher lists the connection manager's
// forward_client_cert_matcher (pkg/proxy/httpconn xfcc_matcher.go): an xDS
// matcher over the request whose actions choose the
// x-forwarded-client-cert mode and details per request.
var supportedXFCCMatcher = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.forward_client_cert_matcher":                             {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ForwardClientCertConfig.forward_client_cert_details":     {},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ForwardClientCertConfig.set_current_client_cert_details": {},
}
