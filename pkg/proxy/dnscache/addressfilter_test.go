package dnscache

import (
	"net/netip"
	"strings"
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
)

func cidrRange(prefix string, bits uint32) *xdscorev3.CidrRange {
	return &xdscorev3.CidrRange{AddressPrefix: prefix, PrefixLen: wrapperspb.UInt32(bits)}
}

func TestAddressFilterDropsMatchingAddresses(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{
		"mixed.test":    "10.0.0.1,10.1.0.2",
		"internal.test": "10.0.0.5,10.0.3.3",
	}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{
		Name:                  "f",
		ResolvedAddressFilter: &matcherv3.AddressMatcher{Ranges: []*xdscorev3.CidrRange{cidrRange("10.0.0.0", 16)}},
	}, r)
	rec := &recorder{changed: map[string]netip.AddrPort{}}
	c.Subscribe(rec)

	// The first address is denied: the host takes the next one.
	h, _ := c.Load("mixed.test", 80)
	wait(t, h)
	if addr, ok := h.Address(); !ok || addr.String() != "10.1.0.2:80" {
		t.Fatalf("mixed.test: %v %v, want 10.1.0.2:80", addr, ok)
	}

	// Every address is denied: no address, a resolution failure.
	h, _ = c.Load("internal.test", 80)
	wait(t, h)
	if addr, ok := h.Address(); ok {
		t.Fatalf("internal.test has address %v", addr)
	}
	if d := h.Details(); !strings.HasPrefix(d, "dns_resolution_failure{") {
		t.Errorf("details %q", d)
	}
	if _, told := rec.changed["internal.test:80"]; told {
		t.Error("the subscriber was told of a filtered host")
	}

	// An IP literal goes through the filter too.
	h, _ = c.Load("10.0.9.9:8080", 80)
	wait(t, h)
	if addr, ok := h.Address(); ok {
		t.Fatalf("a denied IP literal has address %v", addr)
	}

	if v := store.Counter("dns_cache.f.dns_address_filter_out").Value(); v != 4 {
		t.Errorf("dns_address_filter_out %d, want 4", v)
	}
	// The queries themselves succeeded.
	if v := store.Counter("dns_cache.f.dns_query_success").Value(); v != 3 {
		t.Errorf("dns_query_success %d, want 3", v)
	}
}

func TestAddressFilterKeepsThePreviousAddress(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{"a.test": "192.0.2.1"}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{
		Name:                  "k",
		ResolvedAddressFilter: &matcherv3.AddressMatcher{Ranges: []*xdscorev3.CidrRange{cidrRange("127.0.0.0", 8)}},
	}, r)
	h, _ := c.Load("a.test", 80)
	wait(t, h)
	// A later answer that rebinds the name to a denied address leaves the
	// host where it was.
	c.finish(h, dns.Result{Status: dns.Completed, Addresses: []dns.Address{{IP: netip.MustParseAddr("127.0.0.1")}}}, false)
	if addr, ok := h.Address(); !ok || addr.String() != "192.0.2.1:80" {
		t.Fatalf("address %v %v, want 192.0.2.1:80 kept", addr, ok)
	}
	if v := store.Counter("dns_cache.k.host_address_changed").Value(); v != 1 {
		t.Errorf("host_address_changed %d, want 1", v)
	}
}

func TestAddressFilterInvertMatch(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{"in.test": "127.0.0.9", "out.test": "192.0.2.7"}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{
		Name: "i",
		ResolvedAddressFilter: &matcherv3.AddressMatcher{
			Ranges:      []*xdscorev3.CidrRange{cidrRange("127.0.0.0", 8)},
			InvertMatch: true,
		},
	}, r)
	in, _ := c.Load("in.test", 80)
	out, _ := c.Load("out.test", 80)
	wait(t, in)
	wait(t, out)
	if _, ok := in.Address(); !ok {
		t.Error("in.test, inside the ranges, was filtered")
	}
	if addr, ok := out.Address(); ok {
		t.Errorf("out.test, outside the ranges, has address %v", addr)
	}
	if v := store.Counter("dns_cache.i.dns_address_filter_out").Value(); v != 1 {
		t.Errorf("dns_address_filter_out %d, want 1", v)
	}
}

func TestAddressFilterBadRange(t *testing.T) {
	_, errs := Compile(&dfpcommonv3.DnsCacheConfig{
		Name:                  "b",
		ResolvedAddressFilter: &matcherv3.AddressMatcher{Ranges: []*xdscorev3.CidrRange{cidrRange("10.0.0.0", 8), cidrRange("10.0.0.0", 40)}},
	}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "resolved_address_filter.ranges[1].prefix_len") {
		t.Fatalf("errors %v, want one at resolved_address_filter.ranges[1].prefix_len", errs)
	}
}
