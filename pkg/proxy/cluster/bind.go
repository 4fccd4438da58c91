package cluster

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
)

// bindSettings are upstream_bind_config: the local address upstream
// connections leave from, and the options their sockets take.
type bindSettings struct {
	// local is source_address, nil for the system's choice.
	local *net.TCPAddr
	opts  sockopt.Set
}

// buildBind reads upstream_bind_config; nil when it is unset. Errors are
// relative to the cluster.
func buildBind(bc *corev3.BindConfig) (*bindSettings, []error) {
	if bc == nil {
		return nil, nil
	}
	var (
		b    bindSettings
		errs []error
	)
	if sa := bc.GetSourceAddress(); sa != nil {
		ip, err := netip.ParseAddr(sa.GetAddress())
		switch {
		case err != nil:
			errs = append(errs, configErrorf("upstream_bind_config.source_address.address", "%q is not an IP address", sa.GetAddress()))
		case sa.GetProtocol() != corev3.SocketAddress_TCP:
			errs = append(errs, configErrorf("upstream_bind_config.source_address.protocol", "only TCP is supported by Outrigger"))
		default:
			b.local = &net.TCPAddr{IP: ip.AsSlice(), Port: int(sa.GetPortValue()), Zone: ip.Zone()}
		}
	}
	opts, err := sockopt.Compile(bc.GetSocketOptions())
	for _, e := range fieldpath.Split(err) {
		// "[i].field: reason", below the list.
		at, reason, _ := strings.Cut(e.Error(), ": ")
		errs = append(errs, configErrorf("upstream_bind_config.socket_options"+at, "%s", reason))
	}
	b.opts = opts
	if bc.GetFreebind().GetValue() {
		ipv6 := b.local != nil && b.local.IP.To4() == nil
		fb, err := sockopt.Freebind(ipv6)
		if err != nil {
			errs = append(errs, configErrorf("upstream_bind_config.freebind", "%v", err))
		} else {
			b.opts = append(slices.Clip(b.opts), fb)
		}
	}
	return &b, errs
}
