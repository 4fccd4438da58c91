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
// LIVE, and DRAINING once health checks are failed or shutdown starts) and
// mirrors it into the server.live and server.state gauges.
type lifecycle struct {
	mu           sync.Mutex
	phase        initPhase
	healthFailed bool
	shuttingDown bool

	// failed mirrors healthFailed || shuttingDown for readers on the
	// request path (health_check filter, drain decisions), without the lock.
	failed atomic.Bool

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
	case l.shuttingDown || (l.healthFailed && l.phase == phaseInitialized):
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

func (l *lifecycle) startShutdown() {
	l.mu.Lock()
	l.shuttingDown = true
	l.mu.Unlock()
	l.publish()
}

// healthChecksFailed reports /healthcheck/fail in effect or shutdown
// begun. It takes no lock: it is read for every response.
func (l *lifecycle) healthChecksFailed() bool { return l.failed.Load() }

func (l *lifecycle) publish() {
	l.mu.Lock()
	st := l.stateLocked()
	failed := l.healthFailed || l.shuttingDown
	l.failed.Store(failed)
	l.mu.Unlock()
	l.stateGauge.Set(int64(st))
	if failed {
		l.live.Set(0)
	} else {
		l.live.Set(1)
	}
}
