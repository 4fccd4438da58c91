package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedCustomResponsePolicy lists the fields of the custom_response
// filter's local_response_policy that its body format and response code
// details add (filters/http/customresponse); the policy's other fields are
// in supportedFiltersTail.
var supportedCustomResponsePolicy = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy.body_format":                    {},
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy.preserve_response_code_details": {},
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy.response_code_details":          {},

	// The redirect_policy: its redirect_action takes the route's
	// RedirectAction fields, whose route-only rewrites the filter
	// refuses itself; modify_request_headers_action has no extension in
	// Envoy and is refused.
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.uri":                     {},
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.redirect_action":         {},
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.status_code":             {},
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.response_headers_to_add": {},
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.request_headers_to_add":  {},
}
