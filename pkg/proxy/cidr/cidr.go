// Package cidr reads Envoy's CidrRange and looks addresses up in lists of
// them; shared by the listener's filter chain matches, the unified
// matcher's IP matcher, RBAC, IP tagging, the connection manager's
// internal addresses and the xff IP detection extension.
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

// Set is a list of ranges an address may fall in.
type Set []netip.Prefix

// Contains reports whether ip is in one of the ranges; an IPv4-mapped
// IPv6 address is looked up as the IPv4 address it carries.
func (s Set) Contains(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range s {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
