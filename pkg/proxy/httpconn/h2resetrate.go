package httpconn

import "time"

// The RST_STREAM rate limit of Envoy's nghttp2 server sessions
// (Http2ProtocolOptions stream_reset_burst and stream_reset_rate, with
// nghttp2's defaults), a defence against "rapid reset" (CVE-2023-44487)
// beside the premature-reset limit (h2resets.go).
const (
	defaultH2ResetBurst = 1000
	defaultH2ResetRate  = 33
)

// resetBucket is nghttp2's token bucket (nghttp2_ratelim): it starts with
// burst tokens, gains rate tokens per whole second elapsed up to burst, and
// each RST_STREAM the client sends takes one.
type resetBucket struct {
	tokens uint64
	// base is the connection's start; stamp the whole seconds since it
	// at the last refill.
	base  time.Time
	stamp uint64
}

// take refills the bucket for the seconds elapsed and takes a token; it
// reports false when none was left.
func (b *resetBucket) take(burst, rate uint64, now time.Time) bool {
	if sec := uint64(now.Sub(b.base) / time.Second); sec > b.stamp {
		d := sec - b.stamp
		b.stamp = sec
		gain := rate * d
		switch {
		case gain/d != rate, b.tokens+gain < b.tokens, b.tokens+gain > burst:
			// Past what 64 bits hold, or past the burst.
			b.tokens = burst
		default:
			b.tokens += gain
		}
	}
	if b.tokens == 0 {
		return false
	}
	b.tokens--
	return true
}

// countResetLocked takes a token for a RST_STREAM received; with none left
// the connection is closed as nghttp2 closes it: a GOAWAY INTERNAL_ERROR
// naming the last stream the client opened (http2.goaway_sent), no new
// streams, and the end once the open ones are done. Once a GOAWAY went,
// resets are no longer counted, as in nghttp2. h.mu is held.
func (h *h2Conn) countResetLocked() {
	if h.goingAway {
		return
	}
	lim := &h.m.cfg.h2
	if h.resets.take(lim.resetBurst, lim.resetRate, time.Now()) {
		return
	}
	h.goAwayLocked(errCodeInternal)
}
