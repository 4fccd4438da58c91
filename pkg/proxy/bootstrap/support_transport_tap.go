package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedTransportTap lists the fields of the tap transport socket
// (envoy.transport_sockets.tap, see pkg/proxy/tap/transport): its common
// configuration (whose tap fields are supportedTap's), the transport
// socket it wraps, and socket_tap_config. The raw_buffer transport
// socket has no fields.
var supportedTransportTap = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.transport_sockets.tap.v3.Tap.common_config":                        {},
	"envoy.extensions.transport_sockets.tap.v3.Tap.transport_socket":                     {},
	"envoy.extensions.transport_sockets.tap.v3.Tap.socket_tap_config":                    {},
	"envoy.extensions.transport_sockets.tap.v3.SocketTapConfig.set_connection_per_event": {},
	"envoy.extensions.transport_sockets.tap.v3.SocketTapConfig.stats_prefix":             {},
}
