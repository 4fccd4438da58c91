// Package upstreamproxyprotocol is the upstream PROXY protocol transport
// socket (envoy.transport_sockets.upstream_proxy_protocol,
// envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport):
// on a cluster, every new upstream connection starts with a PROXY protocol
// header (v1 text or v2 binary) that tells the upstream the downstream's
// addresses (and TLVs of the downstream's own PROXY header), ahead of the
// bytes of the transport socket it wraps
// (raw_buffer or TLS, which its caller builds).
package upstreamproxyprotocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Name is the transport socket's name in the proxy. spelling
// (envoy.transport_sockets.upstream_proxy_protocol is accepted too).
const Name = "proxy.transport_sockets.upstream_proxy_protocol"

// The wire format's constants (HAProxy's proxy-protocol.txt).
const (
	v2Signature = "\r\n\r\n\x00\r\nQUIT\n"
	// maxV2Block is the largest address and TLV block a v2 header's
	// 16-bit length can describe.
	maxV2Block = 0xffff
)

// Socket is a compiled upstream PROXY protocol transport socket.
type Socket struct {
	v2 bool
	// pass is config.pass_through_tlvs: which of the downstream header's
	// TLVs (those the listener filter kept) the header carries on.
	pass  upstream.TLVSelection
	added []byte
	// tlvsTooLong is upstream.proxyprotocol.v2_tlvs_exceed_max_length.
	tlvsTooLong *stats.Counter
}

// Compile compiles t (not its transport_socket, which the caller builds);
// scope is the cluster's stat scope. Errors name the field below t.
func Compile(t *ppv3.ProxyProtocolUpstreamTransport, scope stats.Scope) (*Socket, error) {
	var errs []error
	if t.GetTransportSocket() == nil {
		errs = append(errs, errors.New("transport_socket: required (the transport socket the PROXY header precedes)"))
	}
	if t.GetAllowUnspecifiedAddress() {
		errs = append(errs, errors.New("allow_unspecified_address: not supported by Outrigger"))
	}
	if t.GetTlvAsPoolKey() {
		errs = append(errs, errors.New("tlv_as_pool_key: not supported by Outrigger"))
	}
	cfg := t.GetConfig()
	pass, err := upstream.CompileTLVSelection(cfg.GetPassThroughTlvs(), "config.pass_through_tlvs")
	if err != nil {
		errs = append(errs, err)
	}
	s := &Socket{v2: cfg.GetVersion() == corev3.ProxyProtocolConfig_V2, pass: pass}
	for i, e := range cfg.GetAddedTlvs() {
		if e.GetType() > 255 {
			errs = append(errs, fmt.Errorf("config.added_tlvs[%d].type: %d is not a TLV type (0 to 255)", i, e.GetType()))
			continue
		}
		if e.GetFormatString() != nil {
			errs = append(errs, fmt.Errorf("config.added_tlvs[%d].format_string: not supported by Outrigger", i))
			continue
		}
		if len(e.GetValue()) > maxV2Block {
			errs = append(errs, fmt.Errorf("config.added_tlvs[%d].value: longer than a TLV can be (65535 bytes)", i))
			continue
		}
		s.added = append(s.added, byte(e.GetType()))
		s.added = binary.BigEndian.AppendUint16(s.added, uint16(len(e.GetValue())))
		s.added = append(s.added, e.GetValue()...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.tlvsTooLong = scope.Scope("upstream.proxyprotocol.").Counter("v2_tlvs_exceed_max_length")
	return s, nil
}

// Header is the header a new connection conn starts with. d, when ok, is
// the downstream's side (a TCP proxy's downstream); without it, as in
// Envoy, a v1 header carries conn's own addresses and a v2 header is a
// LOCAL one (the proxy's own connection, a health check's).
func (s *Socket) Header(conn net.Conn, d upstream.ProxyProtocolData, ok bool) []byte {
	if !s.v2 {
		if !ok {
			d = upstream.ProxyProtocolData{Src: addrPort(conn.LocalAddr()), Dst: addrPort(conn.RemoteAddr())}
		}
		return v1Header(d)
	}
	if !ok {
		return append([]byte(v2Signature), 0x20, 0x00, 0x00, 0x00)
	}
	return s.v2Header(d)
}

// v1Header is "PROXY TCP4|TCP6 src dst sport dport\r\n"; the source's
// family names the line, as in Envoy.
func v1Header(d upstream.ProxyProtocolData) []byte {
	if !d.Src.IsValid() || !d.Dst.IsValid() {
		// Not an IP connection (a unix socket's): nothing to describe.
		return []byte("PROXY UNKNOWN\r\n")
	}
	src, dst := d.Src.Addr().Unmap(), d.Dst.Addr().Unmap()
	family := "TCP4"
	if src.Is6() {
		family, dst = "TCP6", as16(dst)
	}
	return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", family, src, dst, d.Src.Port(), d.Dst.Port())
}

// v2Header is a v2 PROXY command header over TCP with d's addresses
// (IPv4 when both are, else IPv6 with IPv4 addresses mapped), the TLVs of
// d that pass_through_tlvs selects, then the added_tlvs. TLVs that would make the block longer than its 16-bit
// length are left out and counted, as Envoy does.
func (s *Socket) v2Header(d upstream.ProxyProtocolData) []byte {
	src, dst := d.Src.Addr().Unmap(), d.Dst.Addr().Unmap()
	b := append([]byte(v2Signature), 0x21, 0x11, 0, 0)
	if src.Is4() && dst.Is4() {
		b = append(b, src.AsSlice()...)
		b = append(b, dst.AsSlice()...)
	} else {
		b[13] = 0x21
		s16, d16 := as16(src).As16(), as16(dst).As16()
		b = append(b, s16[:]...)
		b = append(b, d16[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, d.Src.Port())
	b = binary.BigEndian.AppendUint16(b, d.Dst.Port())
	var passed []byte
	if s.pass.Any() && d.TLVs != "" {
		passed = s.pass.Filter([]byte(d.TLVs))
	}
	if len(b)-16+len(passed)+len(s.added) > maxV2Block {
		s.tlvsTooLong.Inc()
	} else {
		b = append(append(b, passed...), s.added...)
	}
	binary.BigEndian.PutUint16(b[14:16], uint16(len(b)-16))
	return b
}

// as16 is a in its 16-byte form (an IPv4 address mapped).
func as16(a netip.Addr) netip.Addr { return netip.AddrFrom16(a.As16()) }

// addrPort is a's IP and port, the zero value for an address that is not
// TCP.
func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}
