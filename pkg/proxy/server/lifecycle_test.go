package server

import (
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestLifecycleStates(t *testing.T) {
	type step struct {
		name      string
		do        func(l *lifecycle)
		wantState adminv3.ServerInfo_State
		wantLive  int64
	}
	tests := map[string][]step{
		"start to live": {
			{name: "new", do: func(*lifecycle) {}, wantState: adminv3.ServerInfo_PRE_INITIALIZING, wantLive: 1},
			{name: "initializing", do: func(l *lifecycle) { l.setPhase(phaseInitializing) }, wantState: adminv3.ServerInfo_INITIALIZING, wantLive: 1},
			{name: "initialized", do: func(l *lifecycle) { l.setPhase(phaseInitialized) }, wantState: adminv3.ServerInfo_LIVE, wantLive: 1},
		},
		"health check fail and ok": {
			{name: "live", do: func(l *lifecycle) { l.setPhase(phaseInitialized) }, wantState: adminv3.ServerInfo_LIVE, wantLive: 1},
			{name: "fail", do: func(l *lifecycle) { l.setHealthFailed(true) }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
			{name: "ok", do: func(l *lifecycle) { l.setHealthFailed(false) }, wantState: adminv3.ServerInfo_LIVE, wantLive: 1},
		},
		"fail before live keeps the init state": {
			{name: "fail early", do: func(l *lifecycle) { l.setHealthFailed(true) }, wantState: adminv3.ServerInfo_PRE_INITIALIZING, wantLive: 0},
			{name: "then live", do: func(l *lifecycle) { l.setPhase(phaseInitialized) }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
		},
		"the termination drain cannot be undone": {
			{name: "live", do: func(l *lifecycle) { l.setPhase(phaseInitialized) }, wantState: adminv3.ServerInfo_LIVE, wantLive: 1},
			{name: "terminating", do: func(l *lifecycle) { l.startTermination() }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
			{name: "ok cannot undo it", do: func(l *lifecycle) { l.setHealthFailed(false) }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
			{name: "shutdown", do: func(l *lifecycle) { l.startShutdown() }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
		},
		"shutdown drains for good": {
			{name: "live", do: func(l *lifecycle) { l.setPhase(phaseInitialized) }, wantState: adminv3.ServerInfo_LIVE, wantLive: 1},
			{name: "shutdown", do: func(l *lifecycle) { l.startShutdown() }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
			{name: "ok cannot undo shutdown", do: func(l *lifecycle) { l.setHealthFailed(false) }, wantState: adminv3.ServerInfo_DRAINING, wantLive: 0},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			store := stats.NewStore()
			l := newLifecycle(store.Scope("server."))
			for _, s := range steps {
				s.do(l)
				if got := l.state(); got != s.wantState {
					t.Errorf("%s: state = %v, want %v", s.name, got, s.wantState)
				}
				if got := store.Gauge("server.state").Value(); got != int64(s.wantState) {
					t.Errorf("%s: server.state = %d, want %d", s.name, got, s.wantState)
				}
				if got := store.Gauge("server.live").Value(); got != s.wantLive {
					t.Errorf("%s: server.live = %d, want %d", s.name, got, s.wantLive)
				}
			}
		})
	}
}

// The termination drain fails health checks but leaves the connections to
// the drain sequence; /healthcheck/fail and shutdown close every one.
func TestLifecycleTerminationKeepsConnectionsToTheDrain(t *testing.T) {
	l := newLifecycle(stats.NewStore().Scope("server."))
	l.setPhase(phaseInitialized)
	if l.healthChecksFailed() || l.closesEveryConnection() {
		t.Fatal("a LIVE server fails health checks or closes connections")
	}
	if !l.startTermination() {
		t.Fatal("startTermination did not begin the termination drain")
	}
	if l.startTermination() {
		t.Error("a second startTermination began it again")
	}
	if !l.healthChecksFailed() {
		t.Error("health checks pass during the termination drain")
	}
	if l.closesEveryConnection() {
		t.Error("the termination drain closes every connection, bypassing --drain-strategy")
	}
	l.setHealthFailed(true)
	if !l.closesEveryConnection() {
		t.Error("/healthcheck/fail during the termination drain does not close every connection")
	}
	l.setHealthFailed(false)
	l.startShutdown()
	if !l.closesEveryConnection() {
		t.Error("shutdown does not close every connection")
	}
}
