package admissioncontrol

import (
	"sync"
	"time"
)

// granularity is the span of one sample of the history, Envoy's.
const granularity = time.Second

// history counts the requests and successes of the sampling window, in
// samples of a second each, as Envoy's controller does (Envoy keeps one
// per worker; Outrigger one per filter configuration).
type history struct {
	window time.Duration
	mu     sync.Mutex
	// samples are the window's, oldest first; requests and successes
	// their sums.
	samples             []sample
	requests, successes uint64
}

type sample struct {
	start               time.Time
	requests, successes uint64
}

func newHistory(window time.Duration) *history { return &history{window: window} }

// roll drops the samples older than the window and starts a new one
// when the newest is a second old. mu is held.
func (h *history) roll(now time.Time) {
	for len(h.samples) > 0 && now.Sub(h.samples[0].start) >= h.window {
		h.requests -= h.samples[0].requests
		h.successes -= h.samples[0].successes
		h.samples = h.samples[1:]
	}
	if len(h.samples) == 0 || now.Sub(h.samples[len(h.samples)-1].start) >= granularity {
		h.samples = append(h.samples, sample{start: now})
	}
}

// record counts one request's outcome.
func (h *history) record(now time.Time, success bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roll(now)
	last := &h.samples[len(h.samples)-1]
	last.requests++
	h.requests++
	if success {
		last.successes++
		h.successes++
	}
}

// counts returns the window's requests and successes, and their average
// rate per second (over the window, or the age of the oldest sample when
// longer).
func (h *history) counts(now time.Time) (requests, successes, rps uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roll(now)
	if h.requests > 0 {
		secs := max(h.window, now.Sub(h.samples[0].start)).Truncate(time.Second)
		if secs >= time.Second {
			rps = h.requests / uint64(secs/time.Second)
		}
	}
	return h.requests, h.successes, rps
}
