package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedCredentialInjector lists the fields of
// envoy.filters.http.credential_injector (filters/http/credentialinjector)
// and of its credentials, generic and oauth2 (injectedcredentials/...):
// every field of their messages.
var supportedCredentialInjector = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.credential_injector.v3.CredentialInjector.overwrite":                        {},
	"envoy.extensions.filters.http.credential_injector.v3.CredentialInjector.allow_request_without_credential": {},
	"envoy.extensions.filters.http.credential_injector.v3.CredentialInjector.credential":                       {},

	"envoy.extensions.http.injected_credentials.generic.v3.Generic.credential":          {},
	"envoy.extensions.http.injected_credentials.generic.v3.Generic.header":              {},
	"envoy.extensions.http.injected_credentials.generic.v3.Generic.header_value_prefix": {},

	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.token_endpoint":                  {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.scopes":                          {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.client_credentials":              {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.token_fetch_retry_interval":      {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.endpoint_params":                 {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.ClientCredentials.client_id":     {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.ClientCredentials.client_secret": {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.ClientCredentials.auth_type":     {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.EndpointParameter.name":          {},
	"envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2.EndpointParameter.value":         {},
}
