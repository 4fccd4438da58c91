package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedGrpcJSONTranscoder lists the fields of the gRPC-JSON
// transcoder (envoy.filters.http.grpc_json_transcoder), which is its own
// per-route configuration too: all of them.
var supportedGrpcJSONTranscoder = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.proto_descriptor":                 {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.proto_descriptor_bin":             {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.services":                         {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.print_options":                    {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.match_incoming_request_route":     {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.ignored_query_parameters":         {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.auto_mapping":                     {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.ignore_unknown_query_parameters":  {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.convert_grpc_status":              {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.url_unescape_spec":                {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.query_param_unescape_plus":        {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.match_unregistered_custom_verb":   {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.request_validation_options":       {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.case_insensitive_enum_parsing":    {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.max_request_body_size":            {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.max_response_body_size":           {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.capture_unknown_query_parameters": {},

	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.PrintOptions.add_whitespace":                {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.PrintOptions.always_print_primitive_fields": {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.PrintOptions.always_print_enums_as_ints":    {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.PrintOptions.preserve_proto_field_names":    {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.PrintOptions.stream_newline_delimited":      {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.PrintOptions.stream_sse_style_delimited":    {},

	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.RequestValidationOptions.reject_unknown_method":                {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.RequestValidationOptions.reject_unknown_query_parameters":      {},
	"envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder.RequestValidationOptions.reject_binding_body_field_collisions": {},
}
