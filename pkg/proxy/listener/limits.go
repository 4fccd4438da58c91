package listener

import (
	"errors"
	"math"
	"net"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// connectionLimitKeys are the runtime keys of a listener's connection
// limit, Envoy's envoy.resource_limits.listener.<name>.connection_limit
// and its proxy. spelling, which wins when both are set.
func connectionLimitKeys(name string) [2]string {
	const rest = "resource_limits.listener."
	return [2]string{"proxy." + rest + name + ".connection_limit", "envoy." + rest + name + ".connection_limit"}
}

// connectionLimit is the listener's connection limit now: the runtime
// value of its key read as Envoy's getInteger reads it, no limit without
// one.
func (l *Listener) connectionLimit() int64 {
	if l.runtime == nil {
		return math.MaxInt64
	}
	snap := l.runtime.Snapshot()
	for _, k := range l.limitKeys {
		if _, ok := snap.Get(k); ok {
			return int64(min(snap.Uint64(k, math.MaxInt64), math.MaxInt64))
		}
	}
	return math.MaxInt64
}

// reserve counts a new connection toward the listener's limit, or returns
// false, counting nothing, when the listener is at its limit.
func (l *Listener) reserve() bool {
	limit := l.connectionLimit()
	for {
		cur := l.active.Load()
		if cur >= limit {
			return false
		}
		if l.active.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// connectionBalance reads connection_balance_config: exact_balance is
// implemented; any other balancer is refused with its path.
func (l *Listener) connectionBalance(cfg *listenerv3.Listener_ConnectionBalanceConfig) error {
	if cfg == nil {
		return nil
	}
	switch cfg.GetBalanceType().(type) {
	case *listenerv3.Listener_ConnectionBalanceConfig_ExactBalance_:
		l.exactBalance = true
		return nil
	case *listenerv3.Listener_ConnectionBalanceConfig_ExtendBalance:
		return errors.New("connection_balance_config.extend_balance: not supported by Outrigger")
	case *listenerv3.Listener_ConnectionBalanceConfig_CpuLocalityBalance_:
		return errors.New("connection_balance_config.cpu_locality_balance: not supported by Outrigger")
	default:
		return errors.New("connection_balance_config: a balancer is required (exact_balance)")
	}
}

// assignWorker returns the worker a new connection counts for, and counts
// it there as active. Without a balancer it is the worker whose accept
// loop took the connection; with exact_balance it is the worker with the
// fewest active connections (the first such), as Envoy's exact balancer
// hands the connection to that worker.
func (l *Listener) assignWorker(accepted *workerStats) *workerStats {
	if !l.exactBalance || len(l.workerStats) == 1 {
		accepted.cxActive.Inc()
		return accepted
	}
	l.balanceMu.Lock()
	defer l.balanceMu.Unlock()
	best := &l.workerStats[0]
	for i := 1; i < len(l.workerStats); i++ {
		if w := &l.workerStats[i]; w.cxActive.Value() < best.cxActive.Value() {
			best = w
		}
	}
	best.cxActive.Inc()
	return best
}

// watchOverload follows stop_accepting_connections for the listener's
// accept loops until the listener stops.
func (l *Listener) watchOverload() {
	for {
		paused, changed := l.overload.AcceptState()
		l.setPaused(paused)
		select {
		case <-changed:
		case <-l.stopCh:
			return
		}
	}
}

// setPaused pauses or resumes the accept loops. Pausing sets a deadline in
// the past on the sockets, which wakes the loops blocked in Accept; they
// then wait for the resume, and new connections wait in the kernel's
// accept queue. Resuming clears the deadlines before releasing the loops.
// A stopped listener (its sockets closed or handed over) is left alone.
func (l *Listener) setPaused(paused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || (l.paused.Load() != nil) == paused {
		return
	}
	deadline := time.Time{}
	if paused {
		ch := make(chan struct{})
		l.paused.Store(&ch)
		deadline = time.Unix(1, 0)
	}
	for _, socks := range l.sockets {
		for _, s := range socks {
			if d, ok := s.(deadliner); ok {
				_ = d.SetDeadline(deadline)
			}
		}
	}
	if !paused {
		close(*l.paused.Load())
		l.paused.Store(nil)
		l.log.V(1).Info("accepting connections again: stop_accepting_connections cleared", "listener", l.name)
	} else {
		l.log.V(1).Info("not accepting connections: stop_accepting_connections is saturated", "listener", l.name)
	}
}

// waitResume blocks while the accept loops are paused; it returns false
// when the listener stops meanwhile.
func (l *Listener) waitResume() bool {
	p := l.paused.Load()
	if p == nil {
		return true
	}
	select {
	case <-*p:
		return true
	case <-l.stopCh:
		return false
	}
}

// clearStaleDeadline clears a pause deadline left on ln when the loops
// are not paused (a resume raced with an Accept), so that the loop does
// not spin.
func (l *Listener) clearStaleDeadline(ln net.Listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.paused.Load() != nil {
		return
	}
	if d, ok := ln.(deadliner); ok {
		_ = d.SetDeadline(time.Time{})
	}
}
