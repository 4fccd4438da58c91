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
}
