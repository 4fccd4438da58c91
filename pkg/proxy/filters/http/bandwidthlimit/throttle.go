package bandwidthlimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// throttle meters one response body out of its level's shared bucket, as
// Envoy's StreamRateLimiter: each time bytes wait, the bucket gives what
// it holds, and the rest waits a fill interval. It only reads the body;
// with the delay trailers it adds trailers at the end.
type throttle struct {
	s *settings
	// started is when the first bytes reached the filter (zero before).
	started time.Time
	// rest is how much of the piece being metered still waits.
	rest int
	// delay is the time the filter made the body wait.
	delay time.Duration
	done  bool
}

var _ httpfilter.Throttle = (*throttle)(nil)

// Take implements httpfilter.Throttle.
func (t *throttle) Take(n int, now time.Time) (int, time.Duration) {
	st := t.s.stats
	if t.started.IsZero() {
		t.started = now
		st.pending.Inc()
	}
	if t.rest == 0 {
		// A new piece reached the filter.
		st.incomingSize.Set(int64(n))
		st.incomingTotal.Add(uint64(n))
	}
	k := t.s.bucket.take(n, now)
	if k > 0 {
		st.allowedSize.Set(int64(k))
		st.allowedTotal.Add(uint64(k))
	}
	t.rest = n - k
	if k < n {
		st.enforced.Inc()
		t.delay += t.s.fill
		return k, t.s.fill
	}
	return n, 0
}

// EncodeData implements httpfilter.DataEncoder; the connection manager
// calls Take instead.
func (t *throttle) EncodeData(p []byte) ([]byte, error) { return p, nil }

// EncodeEnd implements httpfilter.DataEncoder: the transfer is over; with
// the delay trailers, the response's transfer time and the filter's
// delay, in milliseconds, each when not 0, as Envoy sets them.
func (t *throttle) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	now := time.Now()
	transfer := time.Duration(0)
	if !t.started.IsZero() {
		transfer = now.Sub(t.started)
	}
	t.finish(now)
	if t.s.delayTrailer == "" {
		return nil, trailers, nil
	}
	if ms := transfer.Milliseconds(); ms > 0 {
		trailers = setTrailer(trailers, t.s.delayTrailer, ms)
	}
	if ms := t.delay.Milliseconds(); ms > 0 {
		trailers = setTrailer(trailers, t.s.filterDelayTrailer, ms)
	}
	return nil, trailers, nil
}

// setTrailer sets a trailer to ms.
func setTrailer(trailers http.Header, name string, ms int64) http.Header {
	if trailers == nil {
		trailers = http.Header{}
	}
	trailers.Set(name, strconv.FormatInt(ms, 10))
	return trailers
}

// finish records the end of the transfer once.
func (t *throttle) finish(now time.Time) {
	if t.done || t.started.IsZero() {
		return
	}
	t.done = true
	t.s.stats.pending.Dec()
	t.s.stats.transfer.Record(uint64(now.Sub(t.started).Milliseconds()))
}

// KeepsLength implements httpfilter.LengthKeeper: the body keeps its
// length unless trailers may be added (which needs a chunked body on
// HTTP/1.1).
func (t *throttle) KeepsLength() bool { return t.s.delayTrailer == "" }
