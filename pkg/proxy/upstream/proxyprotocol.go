package upstream

import (
	"context"
	"net/netip"
)

// ProxyProtocolData is the downstream side an upstream PROXY protocol
// header describes (Envoy's ProxyProtocolData): the downstream's remote
// address as the source and its local address as the destination.
// Connections are shared only between users with the same data, as Envoy
// keys its pools by transport socket options.
type ProxyProtocolData struct {
	Src, Dst netip.AddrPort
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
