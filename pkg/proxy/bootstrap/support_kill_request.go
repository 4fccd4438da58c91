package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedKillRequest lists the fields of envoy.filters.http.kill_request
// (filters/http/killrequest): every field of its message, which is also
// its per-route configuration.
var supportedKillRequest = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.kill_request.v3.KillRequest.probability":         {},
	"envoy.extensions.filters.http.kill_request.v3.KillRequest.kill_request_header": {},
	"envoy.extensions.filters.http.kill_request.v3.KillRequest.direction":           {values: []string{"REQUEST", "RESPONSE"}},
}
