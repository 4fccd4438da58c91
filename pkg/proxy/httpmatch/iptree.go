package httpmatch

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
)

// ipTree is a matcher_tree whose custom_match is Envoy's IP matcher
// (xds.type.matcher.v3.IPMatcher, envoy.matching.custom_matchers.
// trie_matcher): the input's value, an IP address, is looked up among
// CIDR ranges, the longest first. Each prefix length present is one map
// look-up, so the cost does not grow with the number of ranges.
type ipTree[D, A any] struct {
	input Probe[D]
	// ranges are the range matchers by their (masked) range; entries of
	// one range are in the order of their range matchers.
	ranges map[netip.Prefix][]ipEntry[D, A]
	// lengths4 and lengths6 are the prefix lengths present, longest
	// first.
	lengths4, lengths6 []int
}

// ipEntry is one range matcher as one of its ranges holds it.
type ipEntry[D, A any] struct {
	exclusive bool
	on        *onMatch[D, A]
}

// compileIPTree compiles a matcher_tree's custom_match over the input in.
func compileIPTree[D, A any](tc *xdscorev3.TypedExtensionConfig, in Probe[D], action ActionCompiler[A], input inputs[D]) (*ipTree[D, A], error) {
	const path = "matcher_tree.custom_match"
	msg, err := TypedConfig(tc, path, "a custom matcher")
	if err != nil {
		return nil, err
	}
	ipm, ok := msg.(*xdsmatcherv3.IPMatcher)
	if !ok {
		return nil, fmt.Errorf("%s.typed_config: custom matcher %s is not supported by Outrigger (only %s)", path, proto.MessageName(msg), proto.MessageName(&xdsmatcherv3.IPMatcher{}))
	}
	t := &ipTree[D, A]{input: in, ranges: map[netip.Prefix][]ipEntry[D, A]{}}
	for i, rm := range ipm.GetRangeMatchers() {
		rpath := fmt.Sprintf("%s.typed_config.range_matchers[%d]", path, i)
		on, err := compileOnMatch(rm.GetOnMatch(), rpath+".on_match", action, input)
		if err != nil {
			return nil, err
		}
		if len(rm.GetRanges()) == 0 {
			return nil, errors.New(rpath + ".ranges: at least one range is required")
		}
		for j, r := range rm.GetRanges() {
			p, err := cidr.Parse(&corev3.CidrRange{AddressPrefix: r.GetAddressPrefix(), PrefixLen: r.GetPrefixLen()})
			if err != nil {
				return nil, fmt.Errorf("%s.ranges[%d].%w", rpath, j, err)
			}
			t.ranges[p] = append(t.ranges[p], ipEntry[D, A]{exclusive: rm.GetExclusive(), on: on})
			lengths := &t.lengths6
			if p.Addr().Is4() {
				lengths = &t.lengths4
			}
			if !slices.Contains(*lengths, p.Bits()) {
				*lengths = append(*lengths, p.Bits())
			}
		}
	}
	desc := func(a, b int) int { return b - a }
	slices.SortFunc(t.lengths4, desc)
	slices.SortFunc(t.lengths6, desc)
	return t, nil
}

// match looks the input's address up as Envoy's trie matcher does: the
// ranges holding it, the longest first and then in the order of their
// range matchers; the first one decides when it has an action, and a
// nested matcher that finds nothing lets the next range go on, except
// the exclusive ones. found false (complete) when nothing decides, the
// input is absent or not an IP address: the tree's on_no_match then
// applies.
func (t *ipTree[D, A]) match(d D) (a A, found, complete bool) {
	v, ok, available := t.input(d)
	if !available {
		return a, false, false
	}
	if !ok {
		return a, false, true
	}
	addr, err := netip.ParseAddr(v)
	if err != nil {
		return a, false, true
	}
	lengths := t.lengths6
	if addr.Is4() {
		lengths = t.lengths4
	}
	first := true
	for _, bits := range lengths {
		p, err := addr.Prefix(bits)
		if err != nil {
			continue
		}
		for _, e := range t.ranges[p] {
			if !first && e.exclusive {
				continue
			}
			if e.on.nested == nil {
				return e.on.action, true, true
			}
			if a, found, complete = e.on.nested.Evaluate(d); found || !complete {
				return a, found, complete
			}
			first = false
		}
	}
	return a, false, true
}
