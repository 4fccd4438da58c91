package server

import (
	"cmp"
	"context"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Envoy's watchdog defaults: a thread that has not run for the miss
// timeout counts a miss, for the mega-miss timeout a mega miss.
const (
	watchdogTick     = 100 * time.Millisecond
	watchdogMiss     = 200 * time.Millisecond
	watchdogMegaMiss = time.Second
)

// watchdogConfig parameterises runWatchdog; zero fields take the
// defaults above and the real clock.
type watchdogConfig struct {
	tick, miss, megaMiss time.Duration
	newTicker            func(d time.Duration) (<-chan time.Time, func())
	now                  func() time.Time
}

// runWatchdog is the main thread's watchdog (server.main_thread.watchdog_miss
// and watchdog_mega_miss). Go has no event-loop thread to watch, so it
// watches what starves one: it wakes every tick and counts a miss when a
// wake-up comes more than the miss timeout after the previous one (the
// runtime could not schedule it: CPU starvation, long GC pauses), a mega
// miss past the mega-miss timeout. It returns when ctx ends.
func runWatchdog(ctx context.Context, c watchdogConfig, miss, megaMiss *stats.Counter) {
	if c.tick <= 0 {
		c.tick = watchdogTick
	}
	if c.miss <= 0 {
		c.miss = watchdogMiss
	}
	if c.megaMiss <= 0 {
		c.megaMiss = watchdogMegaMiss
	}
	if c.newTicker == nil {
		c.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if c.now == nil {
		c.now = time.Now
	}
	tick, stop := c.newTicker(c.tick)
	defer stop()
	last := c.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			now := c.now()
			gap := now.Sub(last)
			last = now
			if gap > c.miss {
				miss.Inc()
			}
			if gap > c.megaMiss {
				megaMiss.Inc()
			}
		}
	}
}

// watchdogConfigOf reads the main-thread watchdog's timeouts from the
// bootstrap (bootstrap.MainThreadWatchdog, which validation has checked):
// unset ones keep Envoy's defaults. The watchdog wakes twice per shorter
// timeout, as with the defaults, so that a late wake-up is seen within
// it.
func watchdogConfigOf(b *bootstrapv3.Bootstrap) watchdogConfig {
	var c watchdogConfig
	w, _ := bootstrap.MainThreadWatchdog(b)
	if w == nil {
		return c
	}
	if d := w.GetMissTimeout(); d != nil && d.AsDuration() > 0 {
		c.miss = d.AsDuration()
	}
	if d := w.GetMegamissTimeout(); d != nil && d.AsDuration() > 0 {
		c.megaMiss = d.AsDuration()
	}
	if c.miss > 0 || c.megaMiss > 0 {
		shorter := min(cmp.Or(c.miss, watchdogMiss), cmp.Or(c.megaMiss, watchdogMegaMiss))
		c.tick = max(shorter/2, time.Millisecond)
	}
	return c
}
