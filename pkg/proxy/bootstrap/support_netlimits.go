package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedNetLimits lists the fields of the connection-level limits,
// envoy.filters.network.connection_limit and
// envoy.filters.network.local_ratelimit (see supportedCore and
// pkg/proxy/filters/network/connectionlimit, .../localratelimit), and of
// the listener filter envoy.filters.listener.local_ratelimit
// (pkg/proxy/filters/listener/localratelimit): all of them. TokenBucket's fields are in supportedHTTPFilters and
// RuntimeFeatureFlag's in supportedCompression.
var supportedNetLimits = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit.stat_prefix":     {},
	"envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit.max_connections": {},
	"envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit.delay":           {},
	"envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit.runtime_enabled": {},

	"envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit.stat_prefix":     {},
	"envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit.token_bucket":    {},
	"envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit.runtime_enabled": {},
	"envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit.share_key":       {},

	"envoy.extensions.filters.listener.local_ratelimit.v3.LocalRateLimit.stat_prefix":     {},
	"envoy.extensions.filters.listener.local_ratelimit.v3.LocalRateLimit.token_bucket":    {},
	"envoy.extensions.filters.listener.local_ratelimit.v3.LocalRateLimit.runtime_enabled": {},
}
