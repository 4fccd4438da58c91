package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedUpstreamLog lists the router's upstream logs (see
// pkg/proxy/httpconn/uplog.go): upstream_log, access loggers run for each
// upstream attempt (their AccessLog fields are the access logs'), and
// upstream_log_options, the entries logged once an attempt has its
// connection and periodically while it runs.
var supportedUpstreamLog = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.router.v3.Router.upstream_log":                                                   {},
	"envoy.extensions.filters.http.router.v3.Router.upstream_log_options":                                           {},
	"envoy.extensions.filters.http.router.v3.Router.UpstreamAccessLogOptions.flush_upstream_log_on_upstream_stream": {},
	"envoy.extensions.filters.http.router.v3.Router.UpstreamAccessLogOptions.upstream_log_flush_interval":           {},
}
