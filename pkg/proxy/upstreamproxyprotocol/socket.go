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
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
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
	// pass is config.pass_through_tlvs: which of the downstream side's
	// TLVs (those the listener filter kept, those tcp_proxy added) the
	// header carries on.
	pass  upstream.TLVSelection
	added TLVs
	// allowUnspecified is allow_unspecified_address: a downstream side
	// without addresses, or with unspecified ones (0.0.0.0, ::), is
	// described as AF_UNSPEC.
	allowUnspecified bool
	// tlvAsPoolKey is tlv_as_pool_key: connections are shared only
	// between users whose downstream TLVs are the same too.
	tlvAsPoolKey bool
	// cluster is the cluster's name, for %UPSTREAM_CLUSTER% in added TLVs.
	cluster string
	// tlvsTooLong is upstream.proxyprotocol.v2_tlvs_exceed_max_length.
	tlvsTooLong *stats.Counter
	now         func() time.Time
}

// Compile compiles t (not its transport_socket, which the caller builds)
// for the cluster named cluster; scope is the cluster's stat scope and reg
// holds the formatter extensions the added TLVs' format strings may name.
// Errors name the field below t.
func Compile(t *ppv3.ProxyProtocolUpstreamTransport, scope stats.Scope, reg *extension.Registry, cluster string) (*Socket, error) {
	var errs []error
	if t.GetTransportSocket() == nil {
		errs = append(errs, errors.New("transport_socket: required (the transport socket the PROXY header precedes)"))
	}
	cfg := t.GetConfig()
	pass, err := upstream.CompileTLVSelection(cfg.GetPassThroughTlvs(), "config.pass_through_tlvs")
	if err != nil {
		errs = append(errs, err)
	}
	added, err := CompileTLVs(cfg.GetAddedTlvs(), "config.added_tlvs", reg)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Socket{
		v2:               cfg.GetVersion() == corev3.ProxyProtocolConfig_V2,
		pass:             pass,
		added:            added,
		allowUnspecified: t.GetAllowUnspecifiedAddress(),
		tlvAsPoolKey:     t.GetTlvAsPoolKey(),
		cluster:          cluster,
		tlvsTooLong:      scope.Scope("upstream.proxyprotocol.").Counter("v2_tlvs_exceed_max_length"),
		now:              time.Now,
	}, nil
}

// PoolKey is the part of the downstream side d that decides which
// connections a user may share, as Envoy hashes its transport socket
// options: the addresses, and the TLVs too with tlv_as_pool_key.
func (s *Socket) PoolKey(d upstream.ProxyProtocolData) upstream.ProxyProtocolData {
	if !s.tlvAsPoolKey {
		d.TLVs = ""
	}
	return d
}

// Header is the header a new connection conn starts with. d, when ok, is
// the downstream's side (a TCP proxy's downstream, an HTTP connection's
// PROXY header); without it, as in Envoy, a v1 header carries conn's own
// addresses and a v2 header is a LOCAL one (the proxy's own connection, a
// health check's).
func (s *Socket) Header(conn net.Conn, d upstream.ProxyProtocolData, ok bool) []byte {
	if ok && s.allowUnspecified && unspecified(d) {
		if !s.v2 {
			return []byte(v1Unknown)
		}
		return s.v2Unspec(conn, d)
	}
	if !ok {
		return OwnHeader(conn, s.v2)
	}
	if !s.v2 {
		return v1Header(d)
	}
	return s.v2Header(conn, d)
}

// OwnHeader is the PROXY header of a connection that has no downstream
// side (the proxy's own, a health check's), as Envoy writes it: in v1,
// conn's own addresses (UNKNOWN when they are not TCP); in v2, a LOCAL
// header.
func OwnHeader(conn net.Conn, v2 bool) []byte {
	if v2 {
		return append([]byte(v2Signature), 0x20, 0x00, 0x00, 0x00)
	}
	return v1Header(upstream.ProxyProtocolData{Src: addrPort(conn.LocalAddr()), Dst: addrPort(conn.RemoteAddr())})
}

// unspecified reports whether d has a missing or an unspecified address.
func unspecified(d upstream.ProxyProtocolData) bool {
	return !d.Src.IsValid() || !d.Dst.IsValid() || d.Src.Addr().IsUnspecified() || d.Dst.Addr().IsUnspecified()
}

// v1Unknown is the v1 header of a connection whose addresses it does not
// tell.
const v1Unknown = "PROXY UNKNOWN\r\n"

// v1Header is "PROXY TCP4|TCP6 src dst sport dport\r\n"; the source's
// family names the line, as in Envoy.
func v1Header(d upstream.ProxyProtocolData) []byte {
	if !d.Src.IsValid() || !d.Dst.IsValid() {
		// Not an IP connection (a unix socket's): nothing to describe.
		return []byte(v1Unknown)
	}
	src, dst := d.Src.Addr().Unmap(), d.Dst.Addr().Unmap()
	family := "TCP4"
	if src.Is6() {
		family, dst = "TCP6", as16(dst)
	}
	return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", family, src, dst, d.Src.Port(), d.Dst.Port())
}

// v2Header is a v2 PROXY command header over TCP with d's addresses,
// then the TLVs.
func (s *Socket) v2Header(conn net.Conn, d upstream.ProxyProtocolData) []byte {
	return s.appendTLVs(v2Addresses(d), conn, d)
}

// v2Addresses is the start of a v2 PROXY command header over TCP with
// d's addresses (IPv4 when both are, else IPv6 with IPv4 addresses
// mapped); its length field counts the addresses only.
func v2Addresses(d upstream.ProxyProtocolData) []byte {
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
	binary.BigEndian.PutUint16(b[14:16], uint16(len(b)-16))
	return b
}

// AddressHeader is a PROXY header (v2 when v2 is set, else v1) that says
// a connection comes from src to dst, without TLVs: what Envoy writes
// ahead of a terminated CONNECT's payload (connect_config's
// proxy_protocol_config).
func AddressHeader(src, dst netip.AddrPort, v2 bool) []byte {
	d := upstream.ProxyProtocolData{Src: src, Dst: dst}
	if v2 {
		return v2Addresses(d)
	}
	return v1Header(d)
}

// v2Unspec is a v2 PROXY command header whose family is AF_UNSPEC: no
// addresses, only the TLVs (allow_unspecified_address).
func (s *Socket) v2Unspec(conn net.Conn, d upstream.ProxyProtocolData) []byte {
	return s.appendTLVs(append([]byte(v2Signature), 0x21, 0x00, 0, 0), conn, d)
}

// appendTLVs completes the v2 header b: the TLVs of d that
// pass_through_tlvs selects, then the added_tlvs (format strings rendered
// for conn), and the block's length. TLVs that would make the block
// longer than its 16-bit length are left out and counted, as Envoy does.
func (s *Socket) appendTLVs(b []byte, conn net.Conn, d upstream.ProxyProtocolData) []byte {
	var tlvs []byte
	if s.pass.Any() && d.TLVs != "" {
		tlvs = s.pass.Filter([]byte(d.TLVs))
	}
	if !s.added.Empty() {
		var e *accesslog.Entry
		if s.added.Dynamic() {
			e = s.entry(conn)
		}
		tlvs = s.added.Append(tlvs[:len(tlvs):len(tlvs)], e)
	}
	if len(b)-16+len(tlvs) > maxV2Block {
		s.tlvsTooLong.Inc()
	} else {
		b = append(b, tlvs...)
	}
	binary.BigEndian.PutUint16(b[14:16], uint16(len(b)-16))
	return b
}

// entry is what the added TLVs' format strings see: as in Envoy, the
// upstream connection's own stream info, whose connection addresses
// are conn's (%DOWNSTREAM_LOCAL_ADDRESS% is the proxy's end), with the
// host and cluster it goes to.
func (s *Socket) entry(conn net.Conn) *accesslog.Entry {
	local, remote := conn.LocalAddr().String(), conn.RemoteAddr().String()
	return &accesslog.Entry{
		StartTime:               s.now(),
		DownstreamLocalAddress:  local,
		DownstreamRemoteAddress: remote,
		UpstreamLocalAddress:    local,
		UpstreamHost:            remote,
		UpstreamCluster:         s.cluster,
	}
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
