package httpconn

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// h2KeepaliveSettings are http2_protocol_options.connection_keepalive:
// a PING every interval (plus a random jitter of up to jitterPct percent
// of it), the connection cut when no answer comes within timeout.
type h2KeepaliveSettings struct {
	interval, timeout time.Duration
	jitterPct         uint64
}

// defaultKeepaliveJitter is Envoy's interval_jitter when unset: 15%.
const defaultKeepaliveJitter = 15

// readKeepalive reads connection_keepalive; the zero value (no interval)
// sends no PINGs.
func readKeepalive(ka *corev3.KeepaliveSettings) h2KeepaliveSettings {
	if ka == nil {
		return h2KeepaliveSettings{}
	}
	s := h2KeepaliveSettings{
		interval:  ka.GetInterval().AsDuration(),
		timeout:   ka.GetTimeout().AsDuration(),
		jitterPct: defaultKeepaliveJitter,
	}
	if j := ka.GetIntervalJitter(); j != nil {
		s.jitterPct = uint64(j.GetValue())
	}
	return s
}

// next is the wait before the next PING: the interval plus its jitter.
func (s h2KeepaliveSettings) next() time.Duration {
	d := s.interval
	if j := uint64(d) * s.jitterPct / 100; j > 0 {
		d += time.Duration(rand.Uint64N(j))
	}
	return d
}

// errKeepaliveTimeout ends a connection whose client did not answer a
// keepalive PING in time.
var errKeepaliveTimeout = errors.New("http/2 keepalive timeout")

// h2Keepalive is one connection's keepalive state, guarded by its mu.
type h2Keepalive struct {
	timer *time.Timer
	// waiting: a PING with payload is out and unanswered; the
	// connection ends at deadline unless a frame comes first.
	waiting  bool
	payload  [8]byte
	deadline time.Time
	sent     uint64
}

// startKeepalive arms the first PING, when connection_keepalive asks for
// them.
func (h *h2Conn) startKeepalive() {
	s := h.m.cfg.h2.keepalive
	if s.interval <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ka.timer = time.AfterFunc(s.next(), h.keepaliveTick)
}

// keepaliveTick runs on the timer: it sends the next PING, or, while one
// is unanswered, ends the connection once its deadline passed (counted in
// http2.keepalive_timeout, as in Envoy).
func (h *h2Conn) keepaliveTick() {
	s := h.m.cfg.h2.keepalive
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.ending || h.fail != nil {
		return
	}
	now := time.Now()
	if h.ka.waiting {
		if left := h.ka.deadline.Sub(now); left > 0 {
			h.ka.timer.Reset(left)
			return
		}
		h.stats.keepaliveTimeout.Inc()
		h.failLocked(errKeepaliveTimeout)
		return
	}
	h.ka.sent++
	binary.BigEndian.PutUint64(h.ka.payload[:], h.ka.sent)
	h.wbuf = appendFrameHeader(h.wbuf, 8, framePing, 0, 0)
	h.wbuf = append(h.wbuf, h.ka.payload[:]...)
	h.countFrameLocked(true)
	h.kickLocked()
	h.ka.waiting = true
	h.ka.deadline = now.Add(s.timeout)
	h.ka.timer.Reset(s.timeout)
}

// keepaliveSeen notes a frame from the client while a PING is out: as in
// Envoy, any frame shows the connection alive and extends the wait (a
// long queue ahead of the answer is no failure); the answer itself (a PING
// ACK with the payload sent) ends the wait and arms the next PING.
func (h *h2Conn) keepaliveSeen(pingAck bool, p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ka.waiting || h.ka.timer == nil {
		return
	}
	s := h.m.cfg.h2.keepalive
	if pingAck && string(p) == string(h.ka.payload[:]) {
		h.ka.waiting = false
		h.ka.timer.Reset(s.next())
		return
	}
	h.ka.deadline = time.Now().Add(s.timeout)
}

// stopKeepalive stops the timer as the connection ends.
func (h *h2Conn) stopKeepalive() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ka.timer != nil {
		h.ka.timer.Stop()
	}
}
