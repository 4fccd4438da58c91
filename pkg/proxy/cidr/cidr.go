// Package cidr reads Envoy's CidrRange, shared by the listener's filter
// chain matches, the unified matcher's IP matcher, RBAC and IP tagging.
package cidr

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Parse reads a CidrRange; host bits below the prefix length are
// cleared, as Envoy does. Errors name the field below the range.
func Parse(r *corev3.CidrRange) (netip.Prefix, error) {
	ip, err := netip.ParseAddr(r.GetAddressPrefix())
	if err != nil || ip.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("address_prefix: %q is not an IP address", r.GetAddressPrefix())
	}
	bits := r.GetPrefixLen().GetValue()
	if int(bits) > ip.BitLen() {
		return netip.Prefix{}, fmt.Errorf("prefix_len: %d is longer than an %s address (%d bits)", bits, family(ip), ip.BitLen())
	}
	return netip.PrefixFrom(ip, int(bits)).Masked(), nil
}

func family(ip netip.Addr) string {
	if ip.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
