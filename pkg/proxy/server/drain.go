package server

import (
	"errors"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
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
//     time they stop, unless skipExit keeps them accepting. A repeat while
//     the selected listeners are all draining already does nothing;
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
	var selected []*builtListener
	for _, bl := range s.listeners {
		if !inboundOnly || bl.Direction() == corev3.TrafficDirection_INBOUND {
			selected = append(selected, bl)
		}
	}
	s.log.Info("draining listeners", "inboundonly", inboundOnly, "graceful", graceful, "skip_exit", skipExit, "listeners", len(selected))
	if !graceful {
		for _, bl := range selected {
			if notify {
				bl.Drain().Start()
			}
			if !skipExit {
				bl.Stop()
			}
		}
		return nil
	}
	if allDraining(selected) {
		return nil
	}
	for _, bl := range selected {
		bl.Drain().Start()
		if !skipExit {
			bl.Drain().After(func() {
				bl.Stop()
				s.log.Info("listener stopped at the end of its drain", "listener", bl.Name())
			})
		}
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
// /healthcheck/fail (until /healthcheck/ok) and once shutdown has begun,
// the times the server state is DRAINING. The health_check filter then
// answers 503, and every response of a listener with drain_type DEFAULT
// closes its connection. It implements httpconn.HealthState.
func (s *Server) HealthChecksFailed() bool { return s.life.healthChecksFailed() }
