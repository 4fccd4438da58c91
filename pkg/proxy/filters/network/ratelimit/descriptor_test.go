package ratelimit

import (
	"net"
	"testing"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/google/go-cmp/cmp"
)

// TestDescriptorExtras checks that a descriptor's limit override (with
// its unit_multiplier), hits_addend and is_negative_hits go on the wire as
// configured, in the fixed request and in one whose values are rendered
// for the connection.
func TestDescriptorExtras(t *testing.T) {
	f, _, err := build(t, `{"stat_prefix": "s", "domain": "d", SERVICE, "descriptors": [
		{"entries": [{"key": "k", "value": "v"}], "limit": {"requests_per_unit": 7, "unit": "HOUR", "unit_multiplier": 2}, "hits_addend": 3},
		{"entries": [{"key": "back", "value": "v"}], "hits_addend": 2, "is_negative_hits": true},
		{"entries": [{"key": "plain", "value": "v"}], "limit": {"requests_per_unit": 5, "unit": "SECOND"}}]}`, "127.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*commonv3.RateLimitDescriptor{
		{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}},
			Limit:      &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 7, Unit: typev3.RateLimitUnit_HOUR, UnitMultiplier: wrapperspb.UInt32(2)},
			HitsAddend: wrapperspb.UInt64(3)},
		{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "back", Value: "v"}}, HitsAddend: wrapperspb.UInt64(2), IsNegativeHits: true},
		{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "plain", Value: "v"}},
			Limit: &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_SECOND}},
	}
	if diff := cmp.Diff(want, f.req.GetDescriptors(), protocmp.Transform()); diff != "" {
		t.Errorf("fixed request (-want +got):\n%s", diff)
	}

	f, _, err = build(t, `{"stat_prefix": "s", "domain": "d", SERVICE, "descriptors": [
		{"entries": [{"key": "sni", "value": "%REQUESTED_SERVER_NAME%"}], "limit": {"requests_per_unit": 7, "unit": "HOUR"}, "hits_addend": 4, "is_negative_hits": true}]}`, "127.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	got := f.request(conn{a}).GetDescriptors()
	want = []*commonv3.RateLimitDescriptor{{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "sni", Value: "-"}},
		Limit:      &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 7, Unit: typev3.RateLimitUnit_HOUR},
		HitsAddend: wrapperspb.UInt64(4), IsNegativeHits: true}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("rendered request (-want +got):\n%s", diff)
	}
}
