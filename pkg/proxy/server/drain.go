package server

import (
	"errors"
)

// NonGracefulDrainRuntimeKey is Envoy's runtime guard (renamed) that makes
// a non-graceful /drain_listeners drain the connections of the listeners it
// stops, and so accept skip_exit. It is off unless the runtime sets it.
const NonGracefulDrainRuntimeKey = "proxy.reloadable_features.non_graceful_drain_notifies_connections"

// errSkipExitNeedsGraceful is Envoy's answer to skip_exit without graceful.
var errSkipExitNeedsGraceful = errors.New("skip_exit requires graceful")

// DrainListeners drains the listeners, all of them or, with inboundOnly,
// those whose traffic_direction is INBOUND, as Envoy's /drain_listeners:
//
//   - without graceful, they stop accepting at once (refusing new
//     connections) and listener_manager.listener_stopped counts them;
//   - with graceful, their drain sequence starts: for --drain-time-s a
//     growing share of responses (all of them with --drain-strategy
//     immediate) closes its connection (HTTP/1 "Connection: close", HTTP/2
//     GOAWAY) while the listeners still accept, and at the end of the drain
//     time the listeners of that direction stop, unless skipExit keeps
//     them accepting. A repeat while the selected listeners are all
//     draining already does nothing;
//   - once listeners are stopped, discovery can no longer add or update a
//     listener in their direction (see applyListenerUpdate);
//   - skipExit needs graceful (unless the runtime guard
//     NonGracefulDrainRuntimeKey is on: then a non-graceful drain also
//     starts the drain sequence, and skipExit leaves the listeners
//     accepting).
//
// Connections already accepted are never cut: requests in flight complete,
// and the connections close as their responses end. The server state, and
// so /ready, does not change: the process keeps running and stays LIVE
// (fail health checks with /healthcheck/fail to take it out of service).
// It returns at once; the only error is a refused combination.
func (s *Server) DrainListeners(inboundOnly, graceful, skipExit bool) error {
	notify := s.runtime.Snapshot().Bool(NonGracefulDrainRuntimeKey, false)
	if skipExit && !graceful && !notify {
		return errSkipExitNeedsGraceful
	}
	scope := stopAll
	if inboundOnly {
		scope = stopInbound
	}
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	var selected []*builtListener
	for _, bl := range s.lset.active {
		if scope.covers(bl.Direction()) {
			selected = append(selected, bl)
		}
	}
	s.log.Info("draining listeners", "inboundonly", inboundOnly, "graceful", graceful, "skip_exit", skipExit, "listeners", len(selected))
	if !graceful {
		if notify {
			for _, bl := range selected {
				bl.Drain().Start()
			}
		}
		if !skipExit {
			s.stopListenersLocked(scope)
		}
		return nil
	}
	if allDraining(selected) {
		return nil
	}
	for _, bl := range selected {
		bl.Drain().Start()
	}
	if !skipExit {
		s.afterLocked(s.opts.DrainTime, func() {
			s.lset.mu.Lock()
			defer s.lset.mu.Unlock()
			s.log.Info("listeners stopped at the end of their drain")
			s.stopListenersLocked(scope)
		})
	}
	return nil
}

// allDraining reports whether every listener's drain sequence has started.
func allDraining(ls []*builtListener) bool {
	for _, bl := range ls {
		if !bl.Drain().Draining() {
			return false
		}
	}
	return true
}

// HealthChecksFailed reports whether the server fails health checks: after
// /healthcheck/fail (until /healthcheck/ok), during the termination drain
// and once shutdown has begun, the times the server state is DRAINING. The
// health_check filter then answers 503. Every response of a listener with
// drain_type DEFAULT also closes its connection then, except during the
// termination drain, where the listeners' drain sequence decides (per
// --drain-strategy). It implements httpconn.HealthState.
func (s *Server) HealthChecksFailed() bool { return s.life.healthChecksFailed() }
