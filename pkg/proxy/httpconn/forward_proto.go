package httpconn

import (
	"slices"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// forwardProto is forward_proto_config: the x-forwarded-proto a
// connection whose local address a listener filter restored (the PROXY
// protocol's destination) gets from that address's port.
type forwardProto struct {
	https, http []uint32
}

// readForwardProto reads forward_proto_config, nil when unset.
func readForwardProto(c *hcmv3.ForwardProtoConfig) *forwardProto {
	if c == nil {
		return nil
	}
	return &forwardProto{https: c.GetHttpsDestinationPorts(), http: c.GetHttpDestinationPorts()}
}

// connectionProto is the x-forwarded-proto the connection itself says,
// where Envoy sets it from the connection: with forward_proto_config and a
// restored local address whose port it lists, "https" or "http" (the
// HTTPS list first); otherwise the request's scheme (https over TLS).
func (s *stream) connectionProto() string {
	fp := s.m.cfg.forwardProto
	if fp == nil || !s.origDst.IsValid() {
		return s.scheme
	}
	port := uint32(s.origDst.Port())
	switch {
	case slices.Contains(fp.https, port):
		return "https"
	case slices.Contains(fp.http, port):
		return "http"
	}
	return s.scheme
}
