package tcpproxy

import (
	"sync/atomic"
	"time"
)

// Sides of a connection; a relay's direction is named by the side it
// reads.
const (
	downSide = 0
	upSide   = 1
)

// heard records that the peer of side sent bytes, at, measured from
// s.mono: downstream_idle_timeout and upstream_idle_timeout count from
// it. It costs nothing without them.
func (s *session) heard(side int, at time.Duration) {
	cfg := s.p.cfg
	switch {
	case side == downSide && cfg.downIdle > 0:
		s.heardDown.Store(int64(at))
	case side == upSide && cfg.upIdle > 0:
		s.heardUp.Store(int64(at))
	}
}

// startSideIdleTimers starts downstream_idle_timeout's and
// upstream_idle_timeout's timers, once the upstream is connected (as
// idle_timeout's). Envoy's API declares the two fields without
// implementing them; their documented meaning is a timeout per
// connection, counted from the last byte that side sent, and independent
// of idle_timeout, which counts bytes either way. Each closes both
// connections when its peer has been silent for its whole setting, however
// busy the other side is, and counts idle_timeout as idle_timeout does.
func (s *session) startSideIdleTimers() {
	cfg := s.p.cfg
	if cfg.downIdle > 0 {
		s.startSideIdleTimer(cfg.downIdle, &s.heardDown)
	}
	if cfg.upIdle > 0 {
		s.startSideIdleTimer(cfg.upIdle, &s.heardUp)
	}
}

// startSideIdleTimer closes the connection once last (a heard time) is
// idle old. As idle_timeout's, the timer is not moved by every read: when
// it fires it sleeps again for what is left since the last byte. The
// count starts now, with the upstream connected.
func (s *session) startSideIdleTimer(idle time.Duration, last *atomic.Int64) {
	last.Store(int64(time.Since(s.mono)))
	s.addTimer(idle, func(rearm func(time.Duration)) {
		since := time.Since(s.mono) - time.Duration(last.Load())
		if since < idle {
			rearm(idle - since)
			return
		}
		s.p.stats.idleTimeout.Inc()
		s.closeBoth()
	})
}
