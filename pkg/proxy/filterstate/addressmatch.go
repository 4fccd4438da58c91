package filterstate

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
)

// AddressMatch is a compiled FilterStateMatcher.address_match: the object
// is an address (Envoy's address objects: original_dst_address) whose IP
// is in one of the ranges, or, with invert_match, in none of them. Any
// other object does not match, as Envoy's FilterStateIpRangeMatcher.
type AddressMatch struct {
	ranges cidr.Set
	invert bool
}

// CompileAddressMatch compiles an AddressMatcher; errors name the field
// below it.
func CompileAddressMatch(m *matcherv3.AddressMatcher) (*AddressMatch, error) {
	out := &AddressMatch{invert: m.GetInvertMatch()}
	for i, r := range m.GetRanges() {
		p, err := cidr.Parse(&corev3.CidrRange{AddressPrefix: r.GetAddressPrefix(), PrefixLen: r.GetPrefixLen()})
		if err != nil {
			return nil, fmt.Errorf("ranges[%d].%w", i, err)
		}
		out.ranges = append(out.ranges, p)
	}
	return out, nil
}

// Match reports whether the filter state value v matches.
func (m *AddressMatch) Match(v any) bool {
	a, ok := v.(Address)
	if !ok {
		return false
	}
	return m.ranges.Contains(netip.AddrPort(a).Addr()) != m.invert
}
