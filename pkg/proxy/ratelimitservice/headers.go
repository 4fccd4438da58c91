package ratelimitservice

import (
	"strconv"
	"strings"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// The x-ratelimit headers (draft 03).
const (
	HeaderLimit     = "x-ratelimit-limit"
	HeaderRemaining = "x-ratelimit-remaining"
	HeaderReset     = "x-ratelimit-reset"
)

// XRateLimitHeaders are the x-ratelimit headers of the service's
// descriptor statuses, as Envoy's XRateLimitHeaderUtils makes them: the
// limit, remaining and reset of the status closest to its limit (fewest
// remaining) among those with a current limit, the limit followed by the
// quota policy of every such status ("10, 10;w=1;name=\"per-ip\"");
// none when no status has a current limit. enabled says whether the
// headers are on for the descriptor of status i (its x_ratelimit_option,
// else the filter's setting): none are added when they are off for the
// status closest to its limit, and the statuses for which they are off
// have no quota policy.
func XRateLimitHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus, enabled func(i int) bool) [][2]string {
	minIdx := -1
	for i, st := range statuses {
		if st.GetCurrentLimit() == nil {
			continue
		}
		if minIdx < 0 || st.GetLimitRemaining() < statuses[minIdx].GetLimitRemaining() {
			minIdx = i
		}
	}
	if minIdx < 0 || !enabled(minIdx) {
		return nil
	}
	var policy strings.Builder
	for i, st := range statuses {
		cl := st.GetCurrentLimit()
		if cl == nil || !enabled(i) {
			continue
		}
		w := windowSeconds(cl.GetUnit())
		if w == 0 {
			continue
		}
		policy.WriteString(", ")
		policy.WriteString(strconv.FormatUint(uint64(cl.GetRequestsPerUnit()), 10))
		policy.WriteString(";w=")
		policy.WriteString(strconv.FormatUint(uint64(w), 10))
		if n := cl.GetName(); n != "" {
			policy.WriteString(`;name="`)
			policy.WriteString(n)
			policy.WriteByte('"')
		}
	}
	min := statuses[minIdx]
	return [][2]string{
		{HeaderLimit, strconv.FormatUint(uint64(min.GetCurrentLimit().GetRequestsPerUnit()), 10) + policy.String()},
		{HeaderRemaining, strconv.FormatUint(uint64(min.GetLimitRemaining()), 10)},
		{HeaderReset, strconv.FormatInt(min.GetDurationUntilReset().GetSeconds(), 10)},
	}
}

// windowSeconds is a limit unit's length in seconds, 0 for an unknown
// one (no quota policy then).
func windowSeconds(u rlsv3.RateLimitResponse_RateLimit_Unit) uint32 {
	switch u {
	case rlsv3.RateLimitResponse_RateLimit_SECOND:
		return 1
	case rlsv3.RateLimitResponse_RateLimit_MINUTE:
		return 60
	case rlsv3.RateLimitResponse_RateLimit_HOUR:
		return 60 * 60
	case rlsv3.RateLimitResponse_RateLimit_DAY:
		return 24 * 60 * 60
	case rlsv3.RateLimitResponse_RateLimit_WEEK:
		return 7 * 24 * 60 * 60
	case rlsv3.RateLimitResponse_RateLimit_MONTH:
		return 30 * 24 * 60 * 60
	case rlsv3.RateLimitResponse_RateLimit_YEAR:
		return 365 * 24 * 60 * 60
	}
	return 0
}
