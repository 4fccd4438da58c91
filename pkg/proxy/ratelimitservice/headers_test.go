package ratelimitservice

import (
	"slices"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestXRateLimitHeaders(t *testing.T) {
	status := func(limit uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit, name string, remaining uint32, reset time.Duration) *rlsv3.RateLimitResponse_DescriptorStatus {
		return &rlsv3.RateLimitResponse_DescriptorStatus{
			CurrentLimit:       &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: limit, Unit: unit, Name: name},
			LimitRemaining:     remaining,
			DurationUntilReset: durationpb.New(reset),
		}
	}
	tests := map[string]struct {
		in   []*rlsv3.RateLimitResponse_DescriptorStatus
		off  []int // statuses whose descriptor turned the headers off
		want [][2]string
	}{
		"none":             {},
		"no current limit": {in: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK}}},
		"one": {in: []*rlsv3.RateLimitResponse_DescriptorStatus{status(10, rlsv3.RateLimitResponse_RateLimit_SECOND, "per-ip", 3, 1500*time.Millisecond)},
			want: [][2]string{{HeaderLimit, `10, 10;w=1;name="per-ip"`}, {HeaderRemaining, "3"}, {HeaderReset, "1"}}},
		"the one closest to its limit, every policy, unknown units without a window": {in: []*rlsv3.RateLimitResponse_DescriptorStatus{
			status(10, rlsv3.RateLimitResponse_RateLimit_SECOND, "per-ip", 3, time.Second),
			{Code: rlsv3.RateLimitResponse_OK},
			status(1000, rlsv3.RateLimitResponse_RateLimit_HOUR, "", 1, 30*time.Minute),
			status(5, rlsv3.RateLimitResponse_RateLimit_UNKNOWN, "x", 4, time.Minute),
			status(7, rlsv3.RateLimitResponse_RateLimit_DAY, "", 2, time.Hour),
			status(3, rlsv3.RateLimitResponse_RateLimit_WEEK, "", 2, time.Hour),
		}, want: [][2]string{{HeaderLimit, `1000, 10;w=1;name="per-ip", 1000;w=3600, 7;w=86400, 3;w=604800`}, {HeaderRemaining, "1"}, {HeaderReset, "1800"}}},
		"off for the one closest to its limit": {in: []*rlsv3.RateLimitResponse_DescriptorStatus{
			status(10, rlsv3.RateLimitResponse_RateLimit_SECOND, "", 3, time.Second),
			status(1000, rlsv3.RateLimitResponse_RateLimit_HOUR, "", 1, time.Minute),
		}, off: []int{1}},
		"off for another: left out of the policy": {in: []*rlsv3.RateLimitResponse_DescriptorStatus{
			status(10, rlsv3.RateLimitResponse_RateLimit_SECOND, "", 3, time.Second),
			status(1000, rlsv3.RateLimitResponse_RateLimit_HOUR, "", 5, time.Minute),
		}, off: []int{1}, want: [][2]string{{HeaderLimit, `10, 10;w=1`}, {HeaderRemaining, "3"}, {HeaderReset, "1"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, XRateLimitHeaders(tc.in, func(i int) bool { return !slices.Contains(tc.off, i) })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
