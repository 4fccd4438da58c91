package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// refusedTail says why the last refused fields of filters otherwise
// supported (issue #15) are refused.
var refusedTail = map[protoreflect.FullName]string{
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.modify_request_headers_action": "not supported by Outrigger: " +
		"Envoy has no extension of this kind (its category, envoy.http.custom_response.redirect_policy.modify_request_headers_action, " +
		"holds only test factories), so there is no behaviour to implement; request_headers_to_add edits the redirected request",
}
