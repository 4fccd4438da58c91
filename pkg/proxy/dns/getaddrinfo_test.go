package dns

import (
	"context"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGetAddrInfoFamilies(t *testing.T) {
	ips := []netip.Addr{
		netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1"),
		netip.MustParseAddr("::ffff:10.0.0.2"), netip.MustParseAddr("10.0.0.1"),
	}
	tests := map[Family][]string{
		V4Only:      {"10.0.0.1/1m0s", "10.0.0.2/1m0s"},
		V6Only:      {"fd00::1/1m0s"},
		Auto:        {"fd00::1/1m0s"},
		V4Preferred: {"10.0.0.1/1m0s", "10.0.0.2/1m0s"},
		All:         {"fd00::1/1m0s", "10.0.0.1/1m0s", "10.0.0.2/1m0s"},
	}
	for family, want := range tests {
		got := addrs(Result{Addresses: pickFamily(ips, family)})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", family, diff)
		}
	}
	if got := addrs(Result{Addresses: pickFamily(ips[1:2], V4Preferred)}); !cmp.Equal(got, []string{"fd00::1/1m0s"}) {
		t.Errorf("V4_PREFERRED without IPv4: %v", got)
	}
}

func TestGetAddrInfoResolves(t *testing.T) {
	// A literal never leaves the process.
	g := NewGetAddrInfo(GetAddrInfoOptions{Threads: 1, Retries: 0}, Env{})
	r := g.Resolve(context.Background(), "192.0.2.1", V4Only)
	if r.Status != Completed || !cmp.Equal(addrs(r), []string{"192.0.2.1/1m0s"}) {
		t.Errorf("got %v %v", r.Status, addrs(r))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.slots <- struct{}{} // the only slot is busy
	if r := g.Resolve(ctx, "192.0.2.1", V4Only); r.Status != Failed {
		t.Errorf("a resolution waiting for a slot after its caller gave up: %v", r.Status)
	}
}
