package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedOAuth2 lists the fields of envoy.filters.http.oauth2 that
// Outrigger implements (see pkg/proxy/filters/http/oauth2), with its
// per-route OAuth2PerRoute, and the generic secrets its credentials name.
// The token endpoint's retry_policy reads num_retries and
// retry_back_off (listed with the other readers of a core RetryPolicy);
// its retry_on the filter refuses, as Envoy ignores it there.
var supportedOAuth2 = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.oauth2.v3.OAuth2.config":         {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2PerRoute.config": {},

	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.token_endpoint":                              {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.authorization_endpoint":                      {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.end_session_endpoint":                        {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.post_logout_redirect_uri":                    {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.credentials":                                 {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.redirect_uri":                                {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.redirect_path_matcher":                       {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.signout_path":                                {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.forward_bearer_token":                        {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.preserve_authorization_header":               {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.pass_through_matcher":                        {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.auth_scopes":                                 {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.resources":                                   {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.auth_type":                                   {values: []string{"URL_ENCODED_BODY", "BASIC_AUTH", "TLS_CLIENT_AUTH", "PRIVATE_KEY_JWT"}},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.retry_policy":                                {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.forward_id_token":                            {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.private_key_jwt_config":                      {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.token_cookie_chunking":                       {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.use_refresh_token":                           {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.default_expires_in":                          {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.deny_redirect_matcher":                       {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.default_refresh_token_expires_in":            {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.disable_id_token_set_cookie":                 {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.disable_access_token_set_cookie":             {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.disable_refresh_token_set_cookie":            {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.cookie_configs":                              {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.stat_prefix":                                 {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.csrf_token_expires_in":                       {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.code_verifier_token_expires_in":              {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.disable_token_encryption":                    {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.allow_failed_matcher":                        {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.original_request_uri":                        {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.allowed_redirect_domains":                    {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Config.use_access_token_expiry_for_id_token_cookie": {},

	"envoy.extensions.filters.http.oauth2.v3.OAuth2TokenForwarding.header": {},

	"envoy.extensions.filters.http.oauth2.v3.PrivateKeyJwtConfig.signing_algorithm":  {},
	"envoy.extensions.filters.http.oauth2.v3.PrivateKeyJwtConfig.assertion_lifetime": {},
	"envoy.extensions.filters.http.oauth2.v3.PrivateKeyJwtConfig.assertion_audience": {},

	"envoy.extensions.filters.http.oauth2.v3.TokenCookieChunking.max_cookie_size": {},
	"envoy.extensions.filters.http.oauth2.v3.TokenCookieChunking.max_chunks":      {},

	"envoy.extensions.filters.http.oauth2.v3.PostLogoutRedirectUri.disabled": {},
	"envoy.extensions.filters.http.oauth2.v3.PostLogoutRedirectUri.uri":      {},

	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.client_id":     {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.token_secret":  {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.hmac_secret":   {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.cookie_names":  {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.cookie_domain": {},

	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.bearer_token":  {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.oauth_hmac":    {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.oauth_expires": {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.id_token":      {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.refresh_token": {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.oauth_nonce":   {},
	"envoy.extensions.filters.http.oauth2.v3.OAuth2Credentials.CookieNames.code_verifier": {},

	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.bearer_token_cookie_config":  {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.oauth_hmac_cookie_config":    {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.oauth_expires_cookie_config": {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.id_token_cookie_config":      {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.refresh_token_cookie_config": {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.oauth_nonce_cookie_config":   {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfigs.code_verifier_cookie_config": {},

	"envoy.extensions.filters.http.oauth2.v3.CookieConfig.same_site":   {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfig.path":        {},
	"envoy.extensions.filters.http.oauth2.v3.CookieConfig.partitioned": {},

	// Generic secrets (static, from files or from discovery), read by
	// the filters whose credentials name one.
	"envoy.extensions.transport_sockets.tls.v3.Secret.generic_secret": {},
	"envoy.extensions.transport_sockets.tls.v3.GenericSecret.secret":  {},
	// The multi-entry form: read by PRIVATE_KEY_JWT (private_key, key_id);
	// every other reader refuses a secret that has one.
	"envoy.extensions.transport_sockets.tls.v3.GenericSecret.secrets": {},
}
