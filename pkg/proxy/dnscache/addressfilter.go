package dnscache

import (
	"fmt"
	"net/netip"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// addressFilter is resolved_address_filter: the resolved addresses it
// matches (in one of its ranges, or with invert_match in none of them)
// are dropped from every answer before the cache uses it, so that a name
// never leads to a denied address (an SSRF guard against names that
// resolve to internal addresses).
type addressFilter struct {
	ranges cidr.Set
	invert bool
}

// compileAddressFilter checks an AddressMatcher; errors name the field
// path below resolved_address_filter.
func compileAddressFilter(m *matcherv3.AddressMatcher) (*addressFilter, []error) {
	f := &addressFilter{invert: m.GetInvertMatch()}
	var errs []error
	for i, r := range m.GetRanges() {
		p, err := cidr.Parse(&corev3.CidrRange{AddressPrefix: r.GetAddressPrefix(), PrefixLen: r.GetPrefixLen()})
		if err != nil {
			// cidr.Parse says "field: reason"; the field goes in the path.
			field, reason, _ := strings.Cut(err.Error(), ": ")
			errs = append(errs, fieldpath.Errorf(fmt.Sprintf("resolved_address_filter.ranges[%d].%s", i, field), "%s", reason))
			continue
		}
		f.ranges = append(f.ranges, p)
	}
	return f, errs
}

// denies reports whether ip is filtered out.
func (f *addressFilter) denies(ip netip.Addr) bool {
	return f.ranges.Contains(ip) != f.invert
}

// apply drops the denied addresses of res and returns how many it
// dropped. An answer left without addresses is a failure: the host keeps
// the address it had, and the failure refresh applies.
func (f *addressFilter) apply(res *dns.Result) int {
	if f == nil || len(res.Addresses) == 0 {
		return 0
	}
	kept := res.Addresses[:0:0]
	for _, a := range res.Addresses {
		if !f.denies(a.IP) {
			kept = append(kept, a)
		}
	}
	dropped := len(res.Addresses) - len(kept)
	if dropped > 0 {
		res.Addresses = kept
		if len(kept) == 0 {
			res.Status = dns.Failed
		}
	}
	return dropped
}
