package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedInternalRedirects lists the fields of a route's internal
// redirect policy (router/internalredirect.go, followed by httpconn's
// redirect.go) and of its predicates. The deprecated pair
// internal_redirect_action and max_internal_redirects is read as Envoy
// reads it.
var supportedInternalRedirects = map[protoreflect.FullName]fieldSupport{
	"envoy.config.route.v3.RouteAction.internal_redirect_policy":                                            {},
	"envoy.config.route.v3.RouteAction.internal_redirect_action":                                            {},
	"envoy.config.route.v3.RouteAction.max_internal_redirects":                                              {},
	"envoy.config.route.v3.InternalRedirectPolicy.max_internal_redirects":                                   {},
	"envoy.config.route.v3.InternalRedirectPolicy.redirect_response_codes":                                  {},
	"envoy.config.route.v3.InternalRedirectPolicy.predicates":                                               {},
	"envoy.config.route.v3.InternalRedirectPolicy.allow_cross_scheme_redirect":                              {},
	"envoy.config.route.v3.InternalRedirectPolicy.response_headers_to_copy":                                 {},
	"envoy.extensions.internal_redirect.allow_listed_routes.v3.AllowListedRoutesConfig.allowed_route_names": {},
}
