package admin

import (
	"errors"
	"net/http"
	"runtime"
	"sync"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// contentionDisabled is the answer of /contention without mutex tracing
// (Envoy's, with the neutral word; no trailing newline).
const contentionDisabled = "Mutex contention tracing is not enabled. " +
	"To enable, run the proxy with flag --enable-mutex-tracing."

// mutexProfileTries bounds the reads of a mutex profile that keeps growing
// between sizing it and copying it.
const mutexProfileTries = 8

// contention keeps the totals of the previous /contention request: Go's
// mutex profile has no "current" wait, so current_wait_cycles is the mean
// wait per contention since then (see docs/compat.md).
type contention struct {
	mu         sync.Mutex
	read       func() (count, cycles int64, err error) // the runtime's profile; replaced in tests
	lastCount  int64
	lastCycles int64
}

// contentionRoutes serves /contention.
func (a *Admin) contentionRoutes() []Route {
	return []Route{{
		Path:    "/contention",
		Help:    "dump current proxy mutex contention stats (if enabled)",
		Handler: a.handleContention,
	}}
}

// handleContention answers MutexStats from the runtime's mutex profile when
// the proxy runs with --enable-mutex-tracing.
func (a *Admin) handleContention(w *Response, _ *Request) {
	if !a.opts.MutexTracing {
		w.Text(http.StatusOK, contentionDisabled)
		return
	}
	stats, err := a.contention.stats()
	if err != nil {
		w.Fail(err)
		return
	}
	w.Proto(stats, true)
}

// stats reads the profile and moves the baseline of current_wait_cycles.
func (c *contention) stats() (*adminv3.MutexStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count, cycles, err := c.read()
	if err != nil {
		return nil, err
	}
	var current int64
	if count > c.lastCount && cycles >= c.lastCycles {
		current = (cycles - c.lastCycles) / (count - c.lastCount)
	}
	c.lastCount, c.lastCycles = count, cycles
	return &adminv3.MutexStats{
		NumContentions:     uint64(max(count, 0)),
		CurrentWaitCycles:  uint64(current),
		LifetimeWaitCycles: uint64(max(cycles, 0)),
	}, nil
}

// readMutexProfile sums the runtime's mutex profile: contentions and the
// cycles spent waiting, since the process started.
func readMutexProfile() (count, cycles int64, err error) {
	n, _ := runtime.MutexProfile(nil)
	for range mutexProfileTries {
		records := make([]runtime.BlockProfileRecord, n+16)
		var ok bool
		if n, ok = runtime.MutexProfile(records); !ok {
			continue // more records appeared meanwhile: size again
		}
		for _, r := range records[:n] {
			count += r.Count
			cycles += r.Cycles
		}
		return count, cycles, nil
	}
	return 0, 0, errors.New("read mutex profile: it kept growing while being read")
}
