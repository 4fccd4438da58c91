package server

import (
	"context"
	"slices"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
)

// stopScope is which listeners /drain_listeners has stopped, and so in
// which traffic direction listeners may no longer be added or updated.
type stopScope int

const (
	stopNone    stopScope = iota
	stopInbound           // inboundonly: the INBOUND listeners
	stopAll               // every listener
)

// covers reports whether a listener of direction d falls in the scope.
func (sc stopScope) covers(d corev3.TrafficDirection) bool {
	return sc == stopAll || sc == stopInbound && d == corev3.TrafficDirection_INBOUND
}

// listenerSet is the server's listener manager state: the listeners in
// service (static ones first, in configuration order, then the ones from
// discovery in the order they came), the ones retired by discovery that
// still drain their connections, and what /drain_listeners stopped. Its
// lock also serializes discovery updates with /drain_listeners, so that a
// listener is never added in a direction being stopped.
type listenerSet struct {
	mu       sync.Mutex
	active   []*builtListener
	draining []*builtListener
	stopped  stopScope
	closed   bool // shutdown has begun: nothing is added any more
	// terminationEnd is the end of the termination drain window once
	// SIGTERM has opened it (zero before): listeners added meanwhile drain
	// to end with it.
	terminationEnd time.Time
	// timers end graceful drains (stopping the listeners) and retirements
	// (closing a retired listener's connections); shutdown cancels them.
	timers []*time.Timer
	// failures holds, by listener name, the last discovery update of a
	// listener that was refused (shown as error_state in /config_dump),
	// until an update of that listener succeeds.
	failures map[string]*adminv3.UpdateFailureState
	// version is the version_info of the last discovery update.
	version string
	stats   *listener.ManagerStats
}

// activeListeners returns the listeners in service.
func (s *Server) activeListeners() []*builtListener {
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	return slices.Clone(s.lset.active)
}

// afterLocked runs f after d unless shutdown comes first. s.lset.mu is
// held.
func (s *Server) afterLocked(d time.Duration, f func()) {
	s.lset.timers = append(s.lset.timers, time.AfterFunc(d, f))
}

// stopListenersLocked stops the listeners in scope, as the end of
// /drain_listeners does, and from then on refuses to add or update
// listeners there. s.lset.mu is held.
func (s *Server) stopListenersLocked(scope stopScope) {
	s.lset.stopped = max(s.lset.stopped, scope)
	for _, bl := range s.lset.active {
		if scope.covers(bl.Direction()) && !bl.Stopped() {
			bl.Stop()
			s.log.Info("listener stopped", "listener", bl.Name())
		}
	}
}

// retireLocked takes a listener out of service, because discovery removed
// or replaced it: it stops accepting (if a replacement has not taken its
// sockets over already), its connections drain for --drain-time-s with
// --drain-strategy, and then the ones left close as their requests in
// flight end (cut after shutdownGrace). s.lset.mu is held; the caller has
// removed bl from the active list.
func (s *Server) retireLocked(bl *builtListener) {
	s.lset.draining = append(s.lset.draining, bl)
	s.lset.stats.TotalListenersActive.Dec()
	s.lset.stats.TotalListenersDraining.Inc()
	bl.Close()
	bl.Drain().Start()
	s.afterLocked(s.opts.DrainTime, func() { s.finishRetirement(bl) })
}

// finishRetirement closes a retired listener's connections at the end of
// its drain time and forgets it.
func (s *Server) finishRetirement(bl *builtListener) {
	bl.closeFilters()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, m := range bl.managers {
		if err := m.Shutdown(ctx); err != nil {
			s.log.Info("connections of a removed listener cut after the drain time and grace period", "listener", bl.Name())
		}
	}
	_ = bl.ShutdownUDP(ctx)
	bl.closeResources()
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	if i := slices.Index(s.lset.draining, bl); i >= 0 {
		s.lset.draining = slices.Delete(s.lset.draining, i, i+1)
		s.lset.stats.TotalListenersDraining.Dec()
	}
	s.log.Info("removed listener drained", "listener", bl.Name())
}

// activeConnections sums the open downstream connections of every
// listener, draining ones included, for server.total_connections.
func (s *Server) activeConnections() int64 {
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	var n int64
	for _, bl := range s.lset.active {
		n += bl.ActiveConnections()
	}
	for _, bl := range s.lset.draining {
		n += bl.ActiveConnections()
	}
	return n
}

// closeListeners stops every listener from accepting, then closes their
// network filters gracefully: requests in flight complete and their
// responses close the connections (the server now fails health checks);
// whatever is still open after shutdownGrace is cut. Nothing is added
// afterwards.
func (s *Server) closeListeners() {
	s.lset.mu.Lock()
	s.lset.closed = true
	for _, t := range s.lset.timers {
		t.Stop()
	}
	all := append(slices.Clone(s.lset.active), s.lset.draining...)
	s.lset.mu.Unlock()
	for _, bl := range all {
		bl.Close()
	}
	// Close starts every manager's graceful close at once, so the grace
	// period is shared rather than spent manager after manager.
	for _, bl := range all {
		bl.closeFilters()
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, bl := range all {
		for _, m := range bl.managers {
			if err := m.Shutdown(ctx); err != nil {
				s.log.Info("connections cut at the end of the shutdown grace period", "listener", bl.Name())
			}
		}
		_ = bl.ShutdownUDP(ctx)
		bl.closeResources()
	}
}
