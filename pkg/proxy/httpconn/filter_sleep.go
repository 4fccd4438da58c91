package httpconn

import (
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// gonePollInterval is how often a sleeping stream checks that its client
// is still there. An HTTP/2 reset or a shutdown wakes it at once; an
// HTTP/1 client that closes its connection is only seen by looking, since
// nothing reads the connection while its request is held.
const gonePollInterval = 200 * time.Millisecond

// Sleep implements httpfilter.Stream: it holds the request for d, under
// the stream's timeouts, watching for the client going away. When the
// stream idle timeout (the route's idle_timeout when the route sets one),
// the request timeout while the request body has not all arrived, or the
// stream's maximum duration would pass first, it waits until then and
// answers as Envoy's timers do; when the client resets the stream or goes
// away, or the manager is shut down, it ends the stream without a
// response.
func (s *stream) Sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	return s.hold(d, nil)
}

// Wait implements httpfilter.Stream: it holds the request until done is
// closed, as Sleep holds it for a duration, under the same timeouts and
// watching for the client in the same way.
func (s *stream) Wait(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
	}
	return s.hold(0, done)
}

// hold holds the request for d, or until done is closed when d is 0 (see
// Sleep and Wait).
func (s *stream) hold(d time.Duration, done <-chan struct{}) bool {
	now := time.Now()
	s.tLast = now
	var end time.Time
	if d > 0 {
		end = now.Add(d)
	}
	limit := after(now, s.filterIdleTimeout())
	var reqLimit time.Time
	if t := s.m.cfg.requestTimeout; t > 0 && !s.bodyDone {
		reqLimit = s.t0.Add(t)
		limit = earliest(limit, reqLimit)
	}
	limit = earliest(limit, s.durationLimit())
	timesOut := !limit.IsZero() && (end.IsZero() || limit.Before(end))
	if timesOut {
		end = limit
	}
	// A wake-up for this request that wakeChan drops is seen by the
	// checks below.
	w := s.wakeChan()
	if s.peerReset.Load() || s.down.gone() {
		s.abandon()
		return false
	}
	// Without an end (a Wait with no timeout in force), the timer
	// never fires.
	timer := time.NewTimer(time.Hour)
	if !end.IsZero() {
		timer.Reset(time.Until(end))
	} else {
		timer.Stop()
	}
	defer timer.Stop()
	poll := time.NewTicker(gonePollInterval)
	defer poll.Stop()
	for {
		select {
		case <-timer.C:
			s.tLast = time.Now()
			if timesOut {
				s.sleepTimedOut(reqLimit)
				return false
			}
			return true
		case <-done:
			s.tLast = time.Now()
			return true
		case <-*w:
			s.abandon()
			return false
		case <-s.m.ctx.Done():
			s.abandon()
			return false
		case <-poll.C:
			if s.peerReset.Load() || s.down.gone() {
				s.abandon()
				return false
			}
		}
	}
}

// filterIdleTimeout is the stream idle timeout while a filter holds the
// request: the matched route's idle_timeout when it sets one (Envoy
// applies it once the route is known), else the connection manager's.
func (s *stream) filterIdleTimeout() time.Duration {
	if s.cached != nil {
		if d, ok := s.cached.IdleTimeout(); ok {
			return s.m.scaleStreamIdle(d)
		}
	}
	return s.m.scaleStreamIdle(s.m.cfg.streamIdleTimeout)
}

// sleepTimedOut answers a request whose timeout fired while a filter held
// it: the request timeout when reqLimit has passed, else the stream idle
// timeout, as Envoy's timers answer them.
func (s *stream) sleepTimedOut(reqLimit time.Time) {
	if s.maxDurationReached(s.tLast) {
		return
	}
	if !reqLimit.IsZero() && !s.tLast.Before(reqLimit) {
		s.m.stats.rqTimeout.Inc()
		s.localReply(408, bodyRequestTimeout, 0, "request_overall_timeout")
		return
	}
	s.m.stats.rqIdleTimeout.Inc()
	s.localReply(408, bodyStreamTimeout, accesslog.StreamIdleTimeout, "stream_idle_timeout")
}

// abandon ends a stream whose client went away (or reset it) while a
// filter held it: nothing more is sent, and the access log says why.
func (s *stream) abandon() {
	s.abandoned = true
	if s.downstreamReset() {
		return
	}
	s.recordClientGone()
}
