package httpconn

import (
	"net/netip"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestInternalAddresses(t *testing.T) {
	ia, err := readInternalAddresses(&hcmv3.HttpConnectionManager_InternalAddressConfig{CidrRanges: []*corev3.CidrRange{
		{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(8)},
		{AddressPrefix: "fd00::", PrefixLen: wrapperspb.UInt32(8)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "11.0.0.1": false, "fd12::1": true, "127.0.0.1": false} {
		if got := ia.contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("contains(%s) = %v, want %v", addr, got, want)
		}
	}
	var none internalAddresses
	if none.contains(netip.MustParseAddr("10.0.0.1")) {
		t.Error("with no configuration an address was internal")
	}
	for _, bad := range []*corev3.CidrRange{
		{AddressPrefix: "10.0.0", PrefixLen: wrapperspb.UInt32(8)},
		{AddressPrefix: "10.0.0.0", PrefixLen: wrapperspb.UInt32(33)},
	} {
		if _, err := readInternalAddresses(&hcmv3.HttpConnectionManager_InternalAddressConfig{CidrRanges: []*corev3.CidrRange{bad}}); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

func TestStripTrailingDot(t *testing.T) {
	for in, want := range map[string]string{
		"example.com.":      "example.com",
		"example.com.:8080": "example.com:8080",
		"example.com":       "example.com",
		"example.com..":     "example.com.",
		"10.0.0.1:80":       "10.0.0.1:80",
		"[::1]:80":          "[::1]:80",
		"":                  "",
	} {
		if got := stripTrailingDot(in); got != want {
			t.Errorf("stripTrailingDot(%q) = %q, want %q", in, got, want)
		}
	}
}
