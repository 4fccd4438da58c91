package rbacengine

import (
	"errors"
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	upstreamipportv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/matchers/upstream_ip_port/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
)

// UpstreamIPPortName is the proxy. spelling of the one permission matcher
// extension Envoy has (envoy.rbac.matchers.upstream_ip_port).
const UpstreamIPPortName = "proxy.rbac.matchers.upstream_ip_port"

// MatchersCategory is Envoy's extension category of RBAC permission
// matchers (Permission.matcher).
const MatchersCategory = "envoy.rbac.matchers"

// upstreamAddressKey is the filter state a dynamic forward proxy filter
// fills with save_upstream_address (netfilter.UpstreamAddressStateKey;
// not imported, netfilter being a layer above the engine).
const upstreamAddressKey = "envoy.stream.upstream_address"

// compileMatcherPermission compiles a Permission.matcher extension;
// errors name the field below it. Envoy's only one is upstream_ip_port.
func compileMatcherPermission(c *corev3.TypedExtensionConfig) (node, error) {
	cfg := &upstreamipportv3.UpstreamIpPortMatcher{}
	if err := unpackTyped(c, cfg, "permission matcher"); err != nil {
		return node{}, err
	}
	if cfg.GetUpstreamIp() == nil && cfg.GetUpstreamPortRange() == nil {
		// Envoy's constructor throws the same.
		return node{}, errors.New("typed_config: Invalid UpstreamIpPortMatcher configuration - missing `upstream_ip` and/or `upstream_port_range`")
	}
	n := node{kind: kindUpstreamIPPort, key: upstreamAddressKey}
	if r := cfg.GetUpstreamIp(); r != nil {
		p, err := cidr.Parse(r)
		if err != nil {
			return node{}, fmt.Errorf("typed_config.upstream_ip.%w", err)
		}
		n.prefix = p
	}
	if r := cfg.GetUpstreamPortRange(); r != nil {
		// Envoy's range here is closed, [start, end], unlike
		// destination_port_range's; a start above the end matches no
		// port, as Envoy's comparison does. Ports outside 0..65535 are
		// clamped: no port is out there to match.
		n.ports = true
		n.lo, n.hi = clampPort(r.GetStart()), clampPort(r.GetEnd())
		if r.GetStart() > 65535 || r.GetEnd() < 0 {
			n.lo, n.hi = 1, 0
		}
	}
	return n, nil
}

// clampPort bounds v to a port number.
func clampPort(v int64) uint32 {
	switch {
	case v < 0:
		return 0
	case v > 65535:
		return 65535
	}
	return uint32(v)
}

// upstreamIPPort is Envoy's UpstreamIpPortMatcher: the address in the
// filter state envoy.stream.upstream_address is in upstream_ip's range
// and its port in upstream_port_range. Without that filter state (no
// dynamic forward proxy filter before RBAC saved one) nothing matches.
func upstreamIPPort(n *node, in *Input) bool {
	if in.FilterState == nil {
		return false
	}
	v, ok := in.FilterState(n.key)
	if !ok {
		return false
	}
	a, ok := v.(filterstate.Address)
	if !ok {
		return false
	}
	ap := netip.AddrPort(a)
	if n.prefix.IsValid() && !contains(n.prefix, ap.Addr()) {
		return false
	}
	if n.ports {
		p := uint32(ap.Port())
		return n.lo <= p && p <= n.hi
	}
	return true
}
