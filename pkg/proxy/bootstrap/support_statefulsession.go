package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedStatefulSession lists the fields of sticky sessions: the
// stateful session filter (pkg/proxy/filters/http/statefulsession), its
// cookie and header session states (pkg/proxy/sessionstate) and the
// cluster's override_host_status (pkg/proxy/cluster, overridehost.go).
var supportedStatefulSession = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSession.session_state":                          {},
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSession.strict":                                 {},
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSession.stat_prefix":                            {},
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSession.status_on_strict_destination_not_found": {},
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute.disabled":                       {},
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute.stateful_session":               {},

	"envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState.cookie": {},
	"envoy.type.http.v3.Cookie.name":                                                      {},
	"envoy.type.http.v3.Cookie.ttl":                                                       {},
	"envoy.type.http.v3.Cookie.path":                                                      {},
	"envoy.type.http.v3.Cookie.attributes":                                                {},
	"envoy.type.http.v3.CookieAttribute.name":                                             {},
	"envoy.type.http.v3.CookieAttribute.value":                                            {},
	"envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState.name":       {},
	"envoy.extensions.http.stateful_session.envelope.v3.EnvelopeSessionState.header":      {},
	"envoy.extensions.http.stateful_session.envelope.v3.EnvelopeSessionState.Header.name": {},

	"envoy.config.cluster.v3.Cluster.CommonLbConfig.override_host_status": {},
	"envoy.config.core.v3.HealthStatusSet.statuses":                       {},
}
