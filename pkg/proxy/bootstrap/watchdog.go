package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
)

// MainThreadWatchdog returns the watchdog configuration of the main
// thread, and the field path it is at: watchdogs.main_thread_watchdog, or
// the deprecated watchdog (which Envoy applies to the main thread and the
// workers alike); nil when neither is set.
//
// DESIGN: Envoy's watchdog watches event-loop threads: each touches its
// watchdog from its loop, and a thread whose loop is stuck in a callback
// misses. Outrigger has no such threads: connections run on goroutines
// that the Go scheduler moves between OS threads, and a goroutine stuck
// in a callback does not stop the others. What a Go program can honestly
// detect is what starves every goroutine at once (CPU starvation, long
// stop-the-world pauses, a runtime stall): the server's watchdog is one
// goroutine that wakes on a ticker and counts a miss when a wake-up comes
// late (pkg/proxy/server/stats_watchdog.go), under Envoy's main-thread
// stat names. There are no worker threads to give worker_watchdog, and
// kill_timeout, multikill and actions would act on a stall only once it
// is over (the watchdog itself cannot run during it): they are refused
// rather than given a meaning Envoy's do not have.
func MainThreadWatchdog(b *bootstrapv3.Bootstrap) (*bootstrapv3.Watchdog, string) {
	if w := b.GetWatchdogs().GetMainThreadWatchdog(); w != nil {
		return w, "watchdogs.main_thread_watchdog"
	}
	//lint:ignore SA1019 Envoy still accepts the deprecated watchdog.
	if w := b.GetWatchdog(); w != nil {
		return w, "watchdog"
	}
	return nil, ""
}

// watchdogs refuses what Outrigger's watchdog cannot do, with its path
// (actions, which the support table does not list, are refused there).
func (s *semanticChecker) watchdogs(b *bootstrapv3.Bootstrap) {
	const why = "not supported by Outrigger: its watchdog watches the Go runtime's scheduling, see docs/stats.md"
	if b.GetWatchdogs().GetWorkerWatchdog() != nil {
		s.fail("watchdogs.worker_watchdog", "%s (there are no worker threads)", why)
	}
	//lint:ignore SA1019 Envoy still accepts the deprecated watchdog.
	if b.GetWatchdogs() != nil && b.GetWatchdog() != nil {
		s.fail("watchdog", "cannot be set together with watchdogs")
	}
	w, path := MainThreadWatchdog(b)
	if w == nil {
		return
	}
	for _, d := range []struct {
		name string
		set  bool
	}{
		{"kill_timeout", w.GetKillTimeout().AsDuration() != 0},
		{"max_kill_timeout_jitter", w.GetMaxKillTimeoutJitter().AsDuration() != 0},
		{"multikill_timeout", w.GetMultikillTimeout().AsDuration() != 0},
		{"multikill_threshold", w.GetMultikillThreshold().GetValue() != 0},
	} {
		if d.set {
			s.fail(path+"."+d.name, "%s", why)
		}
	}
	if t := w.GetMissTimeout(); t != nil && t.AsDuration() <= 0 {
		s.fail(path+".miss_timeout", "must be greater than 0")
	}
	if t := w.GetMegamissTimeout(); t != nil && t.AsDuration() <= 0 {
		s.fail(path+".megamiss_timeout", "must be greater than 0")
	}
}
