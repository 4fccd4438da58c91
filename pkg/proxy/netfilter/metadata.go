package netfilter

import (
	"net"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// MetadataHolder is a connection that carries Envoy's connection-level
// dynamic metadata: what its listener filters recorded (the PROXY protocol
// filter's TLVs) and what its read filters added (ext_authz's answer),
// before its terminal filter takes it.
type MetadataHolder interface {
	// DynamicMetadata is the connection's dynamic metadata, nil when it
	// has none. Callers must not modify it.
	DynamicMetadata() *corev3.Metadata
}

// DynamicMetadataOf returns c's connection-level dynamic metadata, nil
// when c has none.
func DynamicMetadataOf(c net.Conn) *corev3.Metadata {
	if m, ok := c.(MetadataHolder); ok {
		return m.DynamicMetadata()
	}
	return nil
}

// MetadataSetter is a connection whose read filters may add to its
// dynamic metadata (Envoy's connection StreamInfo::setDynamicMetadata).
type MetadataSetter interface {
	// SetDynamicMetadata merges fields into namespace: each field
	// replaces the one of its name.
	SetDynamicMetadata(namespace string, fields *structpb.Struct)
}

// SetDynamicMetadata merges fields into namespace of c's dynamic
// metadata and reports whether c keeps any (a listener's connection
// does).
func SetDynamicMetadata(c net.Conn, namespace string, fields *structpb.Struct) bool {
	m, ok := c.(MetadataSetter)
	if ok {
		m.SetDynamicMetadata(namespace, fields)
	}
	return ok
}
