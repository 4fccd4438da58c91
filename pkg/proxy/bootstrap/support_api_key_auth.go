package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedAPIKeyAuth lists the fields of envoy.filters.http.api_key_auth
// (filters/http/apikeyauth): every field of its messages.
var supportedAPIKeyAuth = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth.credentials":             {},
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth.key_sources":             {},
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth.forwarding":              {},
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute.credentials":     {},
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute.key_sources":     {},
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute.allowed_clients": {},
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute.forwarding":      {},
	"envoy.extensions.filters.http.api_key_auth.v3.Credential.key":                     {},
	"envoy.extensions.filters.http.api_key_auth.v3.Credential.client":                  {},
	"envoy.extensions.filters.http.api_key_auth.v3.KeySource.header":                   {},
	"envoy.extensions.filters.http.api_key_auth.v3.KeySource.query":                    {},
	"envoy.extensions.filters.http.api_key_auth.v3.KeySource.cookie":                   {},
	"envoy.extensions.filters.http.api_key_auth.v3.Forwarding.header":                  {},
	"envoy.extensions.filters.http.api_key_auth.v3.Forwarding.hide_credentials":        {},
}
