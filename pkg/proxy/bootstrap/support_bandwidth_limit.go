package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedBandwidthLimit lists the fields of
// envoy.filters.http.bandwidth_limit (filters/http/bandwidthlimit), whose
// message is also its per-route configuration. enable_mode REQUEST and
// REQUEST_AND_RESPONSE are refused by the filter itself, with its reason.
var supportedBandwidthLimit = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.stat_prefix":              {},
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.enable_mode":              {},
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.limit_kbps":               {},
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.fill_interval":            {},
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.runtime_enabled":          {},
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.enable_response_trailers": {},
	"envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit.response_trailer_prefix":  {},
}
