package server

import (
	"context"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestWatchdog drives the watchdog with ticks and a scripted clock: a
// wake-up later than the miss timeout after the previous one is a miss,
// later than the mega-miss timeout also a mega miss.
func TestWatchdog(t *testing.T) {
	cases := map[string]struct {
		gaps           []time.Duration // between successive wake-ups
		wantMiss, mega uint64
	}{
		"on time":             {gaps: []time.Duration{100 * time.Millisecond, 110 * time.Millisecond}},
		"exactly the timeout": {gaps: []time.Duration{200 * time.Millisecond}},
		"late":                {gaps: []time.Duration{250 * time.Millisecond, 100 * time.Millisecond}, wantMiss: 1},
		"very late":           {gaps: []time.Duration{1500 * time.Millisecond, 300 * time.Millisecond}, wantMiss: 2, mega: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := stats.NewStore()
			miss, megaMiss := st.Counter("miss"), st.Counter("mega")
			tick := make(chan time.Time)
			stopped := make(chan struct{})
			clock := time.Unix(0, 0)
			reads := make(chan struct{}, len(tc.gaps)+1)
			cfg := watchdogConfig{
				newTicker: func(time.Duration) (<-chan time.Time, func()) { return tick, func() { close(stopped) } },
				now: func() time.Time {
					t := clock // read before signalling: the test moves the clock after the signal
					reads <- struct{}{}
					return t
				},
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); runWatchdog(ctx, cfg, miss, megaMiss) }()
			<-reads // the start time
			for _, g := range tc.gaps {
				clock = clock.Add(g)
				tick <- clock
				<-reads
			}
			cancel()
			<-done
			<-stopped
			if miss.Value() != tc.wantMiss || megaMiss.Value() != tc.mega {
				t.Errorf("miss %d mega %d, want %d %d", miss.Value(), megaMiss.Value(), tc.wantMiss, tc.mega)
			}
		})
	}
}
