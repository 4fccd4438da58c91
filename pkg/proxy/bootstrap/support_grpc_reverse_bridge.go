package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedGrpcReverseBridge lists the fields of
// envoy.filters.http.grpc_http1_reverse_bridge
// (filters/http/grpchttp1reversebridge): every field of its messages.
var supportedGrpcReverseBridge = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfig.content_type":         {},
	"envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfig.withhold_grpc_frames": {},
	"envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfig.response_size_header": {},
	"envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfigPerRoute.disabled":     {},
}
