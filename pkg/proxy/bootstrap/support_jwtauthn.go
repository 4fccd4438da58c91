package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedJWTAuthn lists the fields of envoy.filters.http.jwt_authn that
// Outrigger implements (see supportedCore), and of its per-route
// PerRouteConfig. Not listed, so refused with their path: in remote_jwks'
// retry_policy, retry_on, retry_priority, retry_host_predicate and
// host_selection_retry_max_attempts, which Envoy's conversion to a route
// retry policy drops (it retries on 5xx,gateway-error,connect-failure,reset
// always).
var supportedJWTAuthn = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.providers":              {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.rules":                  {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.bypass_cors_preflight":  {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.requirement_map":        {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.strip_failure_response": {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.stat_prefix":            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication.filter_state_rules":     {},
	"envoy.extensions.filters.http.jwt_authn.v3.FilterStateRule.name":                     {},
	"envoy.extensions.filters.http.jwt_authn.v3.FilterStateRule.requires":                 {},

	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.issuer":                                  {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.audiences":                               {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.remote_jwks":                             {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.local_jwks":                              {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.forward":                                 {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.from_headers":                            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.from_params":                             {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.from_cookies":                            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.forward_payload_header":                  {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.pad_forward_payload_header":              {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.payload_in_metadata":                     {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.header_in_metadata":                      {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.failed_status_in_metadata":               {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.normalize_payload_in_metadata":           {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.NormalizePayload.space_delimited_claims": {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.clock_skew_seconds":                      {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.jwt_cache_config":                        {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.claim_to_headers":                        {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.clear_route_cache":                       {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.subjects":                                {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.require_expiration":                      {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtProvider.max_lifetime":                            {},

	"envoy.extensions.filters.http.jwt_authn.v3.JwtCacheConfig.jwt_cache_size":          {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtCacheConfig.jwt_max_token_size":      {},
	"envoy.extensions.filters.http.jwt_authn.v3.RemoteJwks.http_uri":                    {},
	"envoy.extensions.filters.http.jwt_authn.v3.RemoteJwks.cache_duration":              {},
	"envoy.extensions.filters.http.jwt_authn.v3.RemoteJwks.async_fetch":                 {},
	"envoy.extensions.filters.http.jwt_authn.v3.RemoteJwks.retry_policy":                {},
	"envoy.config.core.v3.RetryPolicy.num_retries":                                      {},
	"envoy.config.core.v3.RetryPolicy.retry_back_off":                                   {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwksAsyncFetch.fast_listener":           {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwksAsyncFetch.failed_refetch_duration": {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtHeader.name":                         {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtHeader.value_prefix":                 {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtClaimToHeader.header_name":           {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtClaimToHeader.claim_name":            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtClaimToHeader.claim_path":            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtClaimToHeader.PathSegment.key":       {},

	"envoy.extensions.filters.http.jwt_authn.v3.ProviderWithAudiences.provider_name":                     {},
	"envoy.extensions.filters.http.jwt_authn.v3.ProviderWithAudiences.audiences":                         {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.provider_name":                            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.provider_and_audiences":                   {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.requires_any":                             {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.requires_all":                             {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.allow_missing_or_failed":                  {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.allow_missing":                            {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement.extract_only_without_validation":          {},
	"envoy.extensions.filters.http.jwt_authn.v3.ExtractOnlyWithoutValidation.verification_status_header": {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirementOrList.requirements":                       {},
	"envoy.extensions.filters.http.jwt_authn.v3.JwtRequirementAndList.requirements":                      {},
	"envoy.extensions.filters.http.jwt_authn.v3.RequirementRule.match":                                   {},
	"envoy.extensions.filters.http.jwt_authn.v3.RequirementRule.requires":                                {},
	"envoy.extensions.filters.http.jwt_authn.v3.RequirementRule.requirement_name":                        {},

	"envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig.disabled":         {},
	"envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig.requirement_name": {},
}
