package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedInternalUpstream lists the fields of the internal_upstream
// transport socket (cluster/internal_upstream.go): the host or cluster
// metadata namespaces a connection to an internal listener passes on
// (MetadataKind's other kinds are refused when the cluster is built, as
// Envoy refuses them) and the transport socket it wraps (raw_buffer).
var supportedInternalUpstream = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport.passthrough_metadata":     {},
	"envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport.transport_socket":         {},
	"envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport.MetadataValueSource.kind": {},
	"envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport.MetadataValueSource.name": {},
}
