package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedTap lists the fields of the tap HTTP filter
// (envoy.filters.http.tap) that Outrigger implements: admin_config (the
// /tap endpoint) and static_config with a file_per_tap sink, buffered or
// streamed traces, tap_enabled sampling, header, trailer and generic body
// matchers. min_streamed_sent_bytes is listed for the transport tap
// socket, which shares these fields; the HTTP filter, where Envoy ignores
// it, refuses it by path itself. The other sinks are refused by path.
var supportedTap = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.tap.v3.Tap.common_config": {},
	// Recorded in buffered traces only, as Envoy does; the upstream
	// connection is refused (support_refused_tail.go).
	"envoy.extensions.filters.http.tap.v3.Tap.record_headers_received_time": {},
	"envoy.extensions.filters.http.tap.v3.Tap.record_downstream_connection": {},

	"envoy.extensions.common.tap.v3.CommonExtensionConfig.admin_config":  {},
	"envoy.extensions.common.tap.v3.CommonExtensionConfig.static_config": {},
	"envoy.extensions.common.tap.v3.AdminConfig.config_id":               {},

	"envoy.config.tap.v3.TapConfig.match":         {},
	"envoy.config.tap.v3.TapConfig.match_config":  {},
	"envoy.config.tap.v3.TapConfig.output_config": {},
	// tap_enabled is a RuntimeFractionalPercent, whose fields are listed
	// with the HTTP filters'.
	"envoy.config.tap.v3.TapConfig.tap_enabled": {},

	"envoy.config.tap.v3.OutputConfig.sinks":                   {},
	"envoy.config.tap.v3.OutputConfig.max_buffered_rx_bytes":   {},
	"envoy.config.tap.v3.OutputConfig.max_buffered_tx_bytes":   {},
	"envoy.config.tap.v3.OutputConfig.streaming":               {},
	"envoy.config.tap.v3.OutputConfig.min_streamed_sent_bytes": {},
	"envoy.config.tap.v3.OutputSink.format": {values: []string{"JSON_BODY_AS_BYTES", "JSON_BODY_AS_STRING",
		"PROTO_BINARY", "PROTO_BINARY_LENGTH_DELIMITED", "PROTO_TEXT"}},
	"envoy.config.tap.v3.OutputSink.file_per_tap":    {},
	"envoy.config.tap.v3.FilePerTapSink.path_prefix": {},

	"envoy.config.common.matcher.v3.MatchPredicate.or_match":                            {},
	"envoy.config.common.matcher.v3.MatchPredicate.and_match":                           {},
	"envoy.config.common.matcher.v3.MatchPredicate.not_match":                           {},
	"envoy.config.common.matcher.v3.MatchPredicate.any_match":                           {},
	"envoy.config.common.matcher.v3.MatchPredicate.http_request_headers_match":          {},
	"envoy.config.common.matcher.v3.MatchPredicate.http_response_headers_match":         {},
	"envoy.config.common.matcher.v3.MatchPredicate.http_request_trailers_match":         {},
	"envoy.config.common.matcher.v3.MatchPredicate.http_response_trailers_match":        {},
	"envoy.config.common.matcher.v3.MatchPredicate.MatchSet.rules":                      {},
	"envoy.config.common.matcher.v3.HttpHeadersMatch.headers":                           {},
	"envoy.config.common.matcher.v3.MatchPredicate.http_request_generic_body_match":     {},
	"envoy.config.common.matcher.v3.MatchPredicate.http_response_generic_body_match":    {},
	"envoy.config.common.matcher.v3.HttpGenericBodyMatch.bytes_limit":                   {},
	"envoy.config.common.matcher.v3.HttpGenericBodyMatch.patterns":                      {},
	"envoy.config.common.matcher.v3.HttpGenericBodyMatch.GenericTextMatch.string_match": {},
	"envoy.config.common.matcher.v3.HttpGenericBodyMatch.GenericTextMatch.binary_match": {},

	// The deprecated match_config: the same predicate in the older package.
	"envoy.config.tap.v3.MatchPredicate.or_match":                            {},
	"envoy.config.tap.v3.MatchPredicate.and_match":                           {},
	"envoy.config.tap.v3.MatchPredicate.not_match":                           {},
	"envoy.config.tap.v3.MatchPredicate.any_match":                           {},
	"envoy.config.tap.v3.MatchPredicate.http_request_headers_match":          {},
	"envoy.config.tap.v3.MatchPredicate.http_response_headers_match":         {},
	"envoy.config.tap.v3.MatchPredicate.http_request_trailers_match":         {},
	"envoy.config.tap.v3.MatchPredicate.http_response_trailers_match":        {},
	"envoy.config.tap.v3.MatchPredicate.MatchSet.rules":                      {},
	"envoy.config.tap.v3.HttpHeadersMatch.headers":                           {},
	"envoy.config.tap.v3.MatchPredicate.http_request_generic_body_match":     {},
	"envoy.config.tap.v3.MatchPredicate.http_response_generic_body_match":    {},
	"envoy.config.tap.v3.HttpGenericBodyMatch.bytes_limit":                   {},
	"envoy.config.tap.v3.HttpGenericBodyMatch.patterns":                      {},
	"envoy.config.tap.v3.HttpGenericBodyMatch.GenericTextMatch.string_match": {},
	"envoy.config.tap.v3.HttpGenericBodyMatch.GenericTextMatch.binary_match": {},
}
