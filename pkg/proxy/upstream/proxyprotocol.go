package upstream

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// ProxyProtocolData is the downstream side an upstream PROXY protocol
// header describes (Envoy's ProxyProtocolData): the downstream's remote
// address as the source and its local address as the destination.
// Connections are shared only between users with the same data, as Envoy
// keys its pools by transport socket options.
type ProxyProtocolData struct {
	Src, Dst netip.AddrPort
	// TLVs are the TLVs (type, length, value, one after the other) the
	// downstream's own PROXY header carried that the proxy_protocol
	// listener filter's pass_through_tlvs kept, for the transport socket's
	// config.pass_through_tlvs.
	TLVs string
}

// ProxyProtocolConn is a downstream connection whose PROXY protocol
// header a listener filter parsed (Envoy's ProxyProtocolFilterState).
type ProxyProtocolConn interface {
	ProxyProtocol() (ProxyProtocolData, bool)
}

// ProxyProtocolOf returns what the PROXY protocol header of a downstream
// connection said, looking through wrappers (TLS); false when no listener
// filter parsed one.
func ProxyProtocolOf(c net.Conn) (ProxyProtocolData, bool) {
	p, ok := wrapped[ProxyProtocolConn](c)
	if !ok {
		return ProxyProtocolData{}, false
	}
	return p.ProxyProtocol()
}

// proxyProtocolKey is the context key of a ProxyProtocolData.
type proxyProtocolKey struct{}

// WithProxyProtocol returns ctx carrying d, for the upstream connection a
// downstream connection needs; d with an invalid address returns ctx
// itself.
func WithProxyProtocol(ctx context.Context, d ProxyProtocolData) context.Context {
	if !d.Src.IsValid() || !d.Dst.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, proxyProtocolKey{}, d)
}

// ProxyProtocolFrom is the ProxyProtocolData ctx carries, false when none.
func ProxyProtocolFrom(ctx context.Context) (ProxyProtocolData, bool) {
	d, ok := ctx.Value(proxyProtocolKey{}).(ProxyProtocolData)
	return d, ok
}

// TLVSelection is a pass_through_tlvs selection (the listener filter's
// and the upstream transport socket's): every TLV, or those of the
// listed types. The zero value selects none.
type TLVSelection struct {
	all   bool
	types [256]bool
	some  bool
}

// CompileTLVSelection compiles a ProxyProtocolPassThroughTLVs; field is its
// path, for errors.
func CompileTLVSelection(p *corev3.ProxyProtocolPassThroughTLVs, field string) (TLVSelection, error) {
	var s TLVSelection
	if p == nil {
		return s, nil
	}
	if p.GetMatchType() == corev3.ProxyProtocolPassThroughTLVs_INCLUDE_ALL {
		s.all, s.some = true, true
		return s, nil
	}
	for i, t := range p.GetTlvType() {
		if t > 255 {
			return s, fmt.Errorf("%s.tlv_type[%d]: %d is not a TLV type (0 to 255)", field, i, t)
		}
		s.types[t], s.some = true, true
	}
	return s, nil
}

// Has reports whether the set selects TLVs of type t.
func (s *TLVSelection) Has(t byte) bool { return s.all || s.types[t] }

// Any reports whether the set may select a TLV.
func (s *TLVSelection) Any() bool { return s.some }

// Filter returns the TLVs of tlvs (a well-formed block) the set selects,
// in their order.
func (s *TLVSelection) Filter(tlvs []byte) []byte {
	if s.all {
		return tlvs
	}
	var out []byte
	for len(tlvs) >= 3 {
		n := 3 + int(binary.BigEndian.Uint16(tlvs[1:3]))
		if s.types[tlvs[0]] {
			out = append(out, tlvs[:n]...)
		}
		tlvs = tlvs[n:]
	}
	return out
}
