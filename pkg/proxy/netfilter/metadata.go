package netfilter

import (
	"net"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// MetadataHolder is a connection that carries Envoy's connection-level
// dynamic metadata: what its listener filters recorded (the PROXY protocol
// filter's TLVs), set before the connection reaches its filter chain and
// not changed afterwards.
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
