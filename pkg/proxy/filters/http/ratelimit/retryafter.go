package ratelimit

import (
	"strconv"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// appendRetryAfter adds enable_retry_after_header's retry-after to a
// 429's headers, as Envoy: the longest duration_until_reset of the
// over-limit statuses, in whole seconds and at least 1; nothing without
// such a status, and nothing over the service's own retry-after.
func appendRetryAfter(headers [][2]string, statuses []*rlsv3.RateLimitResponse_DescriptorStatus) [][2]string {
	for _, kv := range headers {
		if kv[0] == "retry-after" {
			return headers
		}
	}
	var secs int64
	found := false
	for _, st := range statuses {
		if st.GetCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			continue
		}
		found = true
		secs = max(secs, st.GetDurationUntilReset().GetSeconds())
	}
	if !found {
		return headers
	}
	return append(headers, [2]string{"retry-after", strconv.FormatInt(max(secs, 1), 10)})
}
