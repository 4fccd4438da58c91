package server

import (
	"time"
)

// terminationPoll is how often --exit-on-zero-active-connections counts
// the downstream connections during the termination drain (Istio's agent
// counts once a second; a count is cheap here).
const terminationPoll = 100 * time.Millisecond

// terminationSettle is how long after SIGTERM the count starts: a client
// that was connecting when the signal came is given the time to be
// counted, so an instant between two connections does not end the drain
// (Istio waits its minimum drain duration for the same reason).
const terminationSettle = time.Second

// terminationDrain is the window that SIGTERM opens when
// --termination-drain-time-s is not zero. During it the server is DRAINING
// (/ready answers 503, health_check filters fail), every listener keeps
// accepting and serving while its connections drain per --drain-strategy
// over the window, and at its end (or, with
// --exit-on-zero-active-connections, once no downstream connection is
// left) the normal shutdown runs. A nil *terminationDrain is no drain: its
// channels are nil and never ready.
type terminationDrain struct {
	end    *time.Timer
	poll   *time.Ticker // nil without --exit-on-zero-active-connections
	settle time.Time    // no count before this instant
}

// startTermination opens the termination drain window.
func (s *Server) startTermination() *terminationDrain {
	window := s.opts.TerminationDrainTime
	s.life.startTermination()
	s.log.Info("termination drain started: readiness failed, listeners keep serving while their connections drain",
		"window", window.String(), "drain_strategy", s.opts.DrainStrategy.String(),
		"exit_on_zero_active_connections", s.opts.ExitOnZeroActiveConnections)
	s.lset.mu.Lock()
	s.lset.terminationEnd = s.now().Add(window)
	// The listeners' own drain sequence (the one /drain_listeners starts),
	// made to reach every response by the end of the window; retired
	// listeners still draining are hurried to the same end.
	for _, bl := range s.lset.active {
		bl.Drain().StartWithin(window)
	}
	for _, bl := range s.lset.draining {
		bl.Drain().StartWithin(window)
	}
	s.lset.mu.Unlock()
	t := &terminationDrain{end: time.NewTimer(window), settle: time.Now().Add(terminationSettle)}
	if s.opts.ExitOnZeroActiveConnections {
		t.poll = time.NewTicker(terminationPoll)
	}
	return t
}

// drainForTerminationLocked starts the drain of a listener that discovery
// adds during the termination drain, to end with the window. s.lset.mu is
// held.
func (s *Server) drainForTerminationLocked(bl *builtListener) {
	if end := s.lset.terminationEnd; !end.IsZero() {
		bl.Drain().StartWithin(end.Sub(s.now()))
	}
}

// ended is ready when the window is over.
func (t *terminationDrain) ended() <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.end.C
}

// polled is ready each time the downstream connections are to be counted.
func (t *terminationDrain) polled() <-chan time.Time {
	if t == nil || t.poll == nil {
		return nil
	}
	return t.poll.C
}

// noConnectionsLeft reports whether, past the settling second, no
// downstream connection is open on any listener (the admin's do not
// count).
func (s *Server) noConnectionsLeft(t *terminationDrain) bool {
	return !time.Now().Before(t.settle) && s.activeConnections() == 0
}

// stop releases the timers.
func (t *terminationDrain) stop() {
	if t == nil {
		return
	}
	t.end.Stop()
	if t.poll != nil {
		t.poll.Stop()
	}
}
