package httpconn

import "time"

// The runtime keys of the premature-reset limit (Envoy's, with its
// defaults): a stream the client resets before it was answered and within
// the lifetime is premature, and a connection whose streams end that way
// too often is closed, as a defence against "rapid reset" (CVE-2023-44487).
const (
	prematureResetLifetimeKey = "overload.premature_reset_min_stream_lifetime_seconds"
	prematureResetCountKey    = "overload.premature_reset_total_stream_count"

	defaultPrematureResetLifetime = 1
	defaultPrematureResetCount    = 500
)

// errPrematureResets ends a connection whose client reset too many
// streams early.
var errPrematureResets = h2Flood("too many premature resets")

// runtimeUint64 reads a runtime integer, def without a runtime.
func (m *Manager) runtimeUint64(key string, def uint64) uint64 {
	if m.deps.Runtime == nil {
		return def
	}
	return m.deps.Runtime.Uint64(key, def)
}

// streamEndedLocked counts a stream that ended and checks the
// premature-reset limit; h.mu is held. Streams finish drops as the
// connection ends are not counted.
//
// The rule is Envoy's: with the limit L, the connection is closed once
// half of L streams ended prematurely, or, past L streams, once half of
// them did. A stream is premature when it got no response and lived no
// more than the lifetime, counted in whole seconds as Envoy does.
func (h *h2Conn) streamEndedLocked(st *h2Stream) {
	if h.ending {
		return
	}
	h.closedStreams++
	if !st.responded {
		lifetime := h.m.runtimeUint64(prematureResetLifetimeKey, defaultPrematureResetLifetime)
		if uint64(time.Since(st.t0)/time.Second) <= lifetime {
			h.prematureResets++
		}
	}
	if h.prematureResets == 0 {
		return
	}
	limit := h.m.runtimeUint64(prematureResetCountKey, defaultPrematureResetCount)
	threshold := limit
	if h.closedStreams >= limit {
		threshold = h.closedStreams
	}
	if h.prematureResets*2 < threshold {
		return
	}
	if h.fail == nil {
		h.m.stats.rqTooManyPrematureResets.Inc()
	}
	h.failLocked(errPrematureResets)
}
