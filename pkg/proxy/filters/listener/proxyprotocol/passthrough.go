package proxyprotocol

import (
	"net"
	"net/netip"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// proxyProtocolData is what the parsed header r says for the upstream's
// PROXY header, as Envoy's filter state records it: the header's
// addresses and the TLVs pass selects, or, for a header that keeps the
// connection's addresses (v1 UNKNOWN, v2 LOCAL), those addresses.
func proxyProtocolData(r result, pass *upstream.TLVSelection, remote, local net.Addr) upstream.ProxyProtocolData {
	if r.keep {
		return upstream.ProxyProtocolData{Src: tcpAddrPort(remote), Dst: tcpAddrPort(local)}
	}
	d := upstream.ProxyProtocolData{Src: r.src, Dst: r.dst}
	if pass.Any() {
		d.TLVs = string(pass.Filter(r.tlvs))
	}
	return d
}

// tcpAddrPort is a's address and port, the zero value for an address
// that is not TCP.
func tcpAddrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}
