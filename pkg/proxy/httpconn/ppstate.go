package httpconn

import (
	"context"
	"net"
	"net/netip"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// proxyProtocolState is the upstream context of a new connection nc: the
// manager's, carrying the downstream side a cluster's upstream PROXY
// protocol header describes. That is what a listener filter read from
// the connection's own PROXY header; without one, and unless
// add_proxy_protocol_connection_state is false, the connection's remote
// and local addresses, as Envoy's connection manager adds them to the
// connection's filter state. nil when there is none (a cluster's header
// then describes its own connection). Built once per connection, so a
// request pays nothing for it.
func (m *Manager) proxyProtocolState(nc net.Conn) context.Context {
	d, ok := upstream.ProxyProtocolOf(nc)
	if !ok {
		if !m.cfg.addProxyProtocolState {
			return nil
		}
		d = upstream.ProxyProtocolData{Src: addrPort(nc.RemoteAddr()), Dst: addrPort(nc.LocalAddr())}
	}
	if !d.Src.IsValid() || !d.Dst.IsValid() {
		return nil
	}
	return upstream.WithProxyProtocol(m.ctx, d)
}

// addrPort is a TCP address as a netip.AddrPort (an IPv4 one unmapped),
// invalid for other addresses (pipes).
func addrPort(a net.Addr) netip.AddrPort {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	ap := t.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
