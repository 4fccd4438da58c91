package server

import (
	"sync"
	"sync/atomic"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// initPhase is how far initialisation has come; the reported state also
// depends on health-check failure and shutdown.
type initPhase int

const (
	phasePreInit initPhase = iota
	phaseInitializing
	phaseInitialized
)

// lifecycle tracks the server state (PRE_INITIALIZING -> INITIALIZING ->
// LIVE, and DRAINING once health checks are failed, the termination drain
// has begun or shutdown starts) and mirrors it into the server.live and
// server.state gauges.
type lifecycle struct {
	mu           sync.Mutex
	phase        initPhase
	healthFailed bool
	terminating  bool
	shuttingDown bool

	// failed mirrors healthFailed || terminating || shuttingDown for the
	// health_check filter, and closeAll healthFailed || shuttingDown for
	// the drain decisions, both read on the request path without the lock.
	// The termination drain fails health checks but leaves connections to
	// the listeners' drain sequence and its --drain-strategy.
	failed, closeAll atomic.Bool

	live, stateGauge *stats.Gauge
}

func newLifecycle(server stats.Scope) *lifecycle {
	l := &lifecycle{live: server.Gauge("live"), stateGauge: server.Gauge("state")}
	l.publish()
	return l
}

// state computes the state Envoy would report: DRAINING wins once
// initialisation is done and health checks fail or shutdown has begun.
func (l *lifecycle) state() adminv3.ServerInfo_State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stateLocked()
}

func (l *lifecycle) stateLocked() adminv3.ServerInfo_State {
	switch {
	case l.shuttingDown || l.terminating || (l.healthFailed && l.phase == phaseInitialized):
		return adminv3.ServerInfo_DRAINING
	case l.phase == phasePreInit:
		return adminv3.ServerInfo_PRE_INITIALIZING
	case l.phase == phaseInitializing:
		return adminv3.ServerInfo_INITIALIZING
	default:
		return adminv3.ServerInfo_LIVE
	}
}

func (l *lifecycle) setPhase(p initPhase) {
	l.mu.Lock()
	l.phase = p
	l.mu.Unlock()
	l.publish()
}

func (l *lifecycle) setHealthFailed(failed bool) {
	l.mu.Lock()
	l.healthFailed = failed
	l.mu.Unlock()
	l.publish()
}

// startTermination moves to DRAINING for the termination drain; it
// reports whether it began now (false on a repeat).
func (l *lifecycle) startTermination() bool {
	l.mu.Lock()
	began := !l.terminating
	l.terminating = true
	l.mu.Unlock()
	l.publish()
	return began
}

func (l *lifecycle) startShutdown() {
	l.mu.Lock()
	l.shuttingDown = true
	l.mu.Unlock()
	l.publish()
}

// healthChecksFailed reports /healthcheck/fail in effect, the termination
// drain or shutdown begun. It takes no lock: it is read for every response.
func (l *lifecycle) healthChecksFailed() bool { return l.failed.Load() }

// closesEveryConnection reports /healthcheck/fail in effect or shutdown
// begun: then every response of a listener with drain_type DEFAULT closes
// its connection, as in Envoy. It takes no lock.
func (l *lifecycle) closesEveryConnection() bool { return l.closeAll.Load() }

func (l *lifecycle) publish() {
	l.mu.Lock()
	st := l.stateLocked()
	failed := l.healthFailed || l.terminating || l.shuttingDown
	l.failed.Store(failed)
	l.closeAll.Store(l.healthFailed || l.shuttingDown)
	l.mu.Unlock()
	l.stateGauge.Set(int64(st))
	if failed {
		l.live.Set(0)
	} else {
		l.live.Set(1)
	}
}
