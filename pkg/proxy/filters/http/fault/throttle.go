package fault

import (
	"math"
	"net/http"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// fillInterval is how often a throttled response asks for more tokens
// while bytes wait: Envoy's StreamRateLimiter timer.
const fillInterval = 50 * time.Millisecond

// responseThrottle meters one response body out at a rate limit, as
// Envoy's StreamRateLimiter: a token bucket of one byte a token that holds
// a second's worth (limit KiB) and refills continuously at the limit,
// starting, when the fault is injected, with one fill interval's worth.
// Each time bytes wait, the bucket gives what it holds, and the rest waits
// a fill interval. It only reads the body: the response keeps its length.
type responseThrottle struct {
	// rate is in bytes a second; max is the bucket's size.
	rate, max float64
	tokens    float64
	last      time.Time
}

var _ httpfilter.Throttle = (*responseThrottle)(nil)

// start fills the bucket of a limit of kbps KiB/s at now.
func (t *responseThrottle) start(kbps uint64, now time.Time) {
	t.rate = float64(kbps) * 1024
	t.max = t.rate
	t.tokens = t.rate * fillInterval.Seconds()
	t.last = now
}

// Take implements httpfilter.Throttle: it refills the bucket for the time
// since it last did, and gives what it holds, up to n (whole tokens, as
// Envoy's bucket gives them).
func (t *responseThrottle) Take(n int, now time.Time) (int, time.Duration) {
	if d := now.Sub(t.last); d > 0 {
		t.tokens = min(t.max, t.tokens+d.Seconds()*t.rate)
		t.last = now
	}
	k := min(float64(n), math.Floor(t.tokens))
	t.tokens -= k
	if int(k) < n {
		return int(k), fillInterval
	}
	return n, 0
}

// EncodeData implements httpfilter.DataEncoder; the connection manager
// calls Take instead.
func (t *responseThrottle) EncodeData(p []byte) ([]byte, error) { return p, nil }

// EncodeEnd implements httpfilter.DataEncoder: nothing is added.
func (t *responseThrottle) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	return nil, trailers, nil
}

// KeepsLength implements httpfilter.LengthKeeper.
func (t *responseThrottle) KeepsLength() bool { return true }
