package ratelimit

import (
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestAppendRetryAfter(t *testing.T) {
	over := func(d time.Duration) *rlsv3.RateLimitResponse_DescriptorStatus {
		return &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OVER_LIMIT, DurationUntilReset: durationpb.New(d)}
	}
	ok := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, DurationUntilReset: durationpb.New(time.Hour)}
	for name, tc := range map[string]struct {
		headers  [][2]string
		statuses []*rlsv3.RateLimitResponse_DescriptorStatus
		want     string // "" for none added
	}{
		"the longest over-limit reset":    {nil, []*rlsv3.RateLimitResponse_DescriptorStatus{over(5 * time.Second), ok, over(30 * time.Second)}, "30"},
		"at least 1":                      {nil, []*rlsv3.RateLimitResponse_DescriptorStatus{over(300 * time.Millisecond)}, "1"},
		"no reset given":                  {nil, []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OVER_LIMIT}}, "1"},
		"no over-limit status":            {nil, []*rlsv3.RateLimitResponse_DescriptorStatus{ok}, ""},
		"the service's own is kept alone": {[][2]string{{"retry-after", "7"}}, []*rlsv3.RateLimitResponse_DescriptorStatus{over(time.Minute)}, ""},
	} {
		got := appendRetryAfter(tc.headers, tc.statuses)
		added := ""
		if len(got) > len(tc.headers) {
			added = got[len(got)-1][1]
			if got[len(got)-1][0] != "retry-after" {
				t.Errorf("%s: added %v", name, got[len(got)-1])
			}
		}
		if added != tc.want {
			t.Errorf("%s: added %q, want %q", name, added, tc.want)
		}
	}
}
