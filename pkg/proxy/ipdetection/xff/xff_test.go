package xff

import (
	"net/netip"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	xffv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/xff/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
)

func input(remote, xff string) ipdetection.Input {
	return ipdetection.Input{
		Remote: netip.MustParseAddr(remote),
		Header: func(name string) (string, bool) {
			if name == "x-forwarded-for" && xff != "" {
				return xff, true
			}
			return "", false
		},
	}
}

func TestTrustedCIDRs(t *testing.T) {
	d, err := Factory{}.Compile(&xffv3.XffConfig{XffTrustedCidrs: &xffv3.XffTrustedCidrs{Cidrs: []*corev3.CidrRange{
		{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)},
		{AddressPrefix: "2001:db8::", PrefixLen: wrapperspb.UInt32(32)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote, xff, want string
		trusted           bool
	}{
		{"10.1.1.1", "192.0.2.1, 10.0.0.2", "192.0.2.1", false},
		{"10.1.1.1", "192.0.2.1", "192.0.2.1", true},
		{"10.1.1.1", "10.0.0.9,10.0.0.2", "10.0.0.9", false},
		{"10.1.1.1", "10.0.0.9", "10.0.0.9", true},
		{"::ffff:10.1.1.1", "192.0.2.7", "192.0.2.7", true},
		{"2001:db8::1", "2001:db8::2, 2001:dead::1, 2001:db8::3", "2001:dead::1", false},
		{"192.0.2.50", "192.0.2.1", "", false}, // the peer is not a trusted proxy
		{"10.1.1.1", "", "", false},
		{"10.1.1.1", "192.0.2.1, garbage", "", false},
	} {
		r := d.Detect(input(tc.remote, tc.xff))
		got := ""
		if r.Addr.IsValid() {
			got = r.Addr.String()
		}
		if got != tc.want || r.Trusted != tc.trusted || r.RejectStatus != 0 {
			t.Errorf("peer %s, xff %q: %+v, want %q trusted %v", tc.remote, tc.xff, r, tc.want, tc.trusted)
		}
	}
}

func TestTrustedHops(t *testing.T) {
	d, err := Factory{}.Compile(&xffv3.XffConfig{XffNumTrustedHops: 1, SkipXffAppend: wrapperspb.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Detect(input("127.0.0.1", "192.0.2.1, 198.51.100.2, 10.0.0.1")); r.Addr.String() != "198.51.100.2" || r.Trusted {
		t.Errorf("%+v", r)
	}
	if r := d.Detect(input("127.0.0.1", "10.0.0.1")); r.Addr.IsValid() {
		t.Errorf("one entry, one trusted hop: %+v", r)
	}
}

func TestRefusals(t *testing.T) {
	for cfg, want := range map[*xffv3.XffConfig]string{
		{SkipXffAppend: wrapperspb.Bool(false)}:                                                                                              "skip_xff_append: false is not supported by Outrigger",
		{XffNumTrustedHops: 2, XffTrustedCidrs: &xffv3.XffTrustedCidrs{}}:                                                                    "xff_num_trusted_hops: only one of",
		{XffTrustedCidrs: &xffv3.XffTrustedCidrs{Cidrs: []*corev3.CidrRange{{AddressPrefix: "nope"}}}}:                                       "xff_trusted_cidrs.cidrs[0].address_prefix",
		{XffTrustedCidrs: &xffv3.XffTrustedCidrs{Cidrs: []*corev3.CidrRange{{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(33)}}}}: "xff_trusted_cidrs.cidrs[0].prefix_len",
	} {
		if _, err := (Factory{}).Compile(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want %q", cfg, err, want)
		}
	}
}
