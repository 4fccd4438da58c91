package server

import (
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestWatchdogConfigOf: the main-thread watchdog takes its timeouts from
// watchdogs.main_thread_watchdog or the deprecated watchdog, and wakes
// twice per shorter timeout; unset, Envoy's defaults.
func TestWatchdogConfigOf(t *testing.T) {
	ms := func(n int) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Millisecond) }
	for name, tc := range map[string]struct {
		b    *bootstrapv3.Bootstrap
		want watchdogConfig
	}{
		"none": {b: &bootstrapv3.Bootstrap{}},
		"main thread": {
			b:    &bootstrapv3.Bootstrap{Watchdogs: &bootstrapv3.Watchdogs{MainThreadWatchdog: &bootstrapv3.Watchdog{MissTimeout: ms(50), MegamissTimeout: ms(300)}}},
			want: watchdogConfig{tick: 25 * time.Millisecond, miss: 50 * time.Millisecond, megaMiss: 300 * time.Millisecond},
		},
		"deprecated, mega miss only": {
			//lint:ignore SA1019 Envoy still accepts the deprecated watchdog.
			b:    &bootstrapv3.Bootstrap{Watchdog: &bootstrapv3.Watchdog{MegamissTimeout: ms(120)}},
			want: watchdogConfig{tick: 60 * time.Millisecond, megaMiss: 120 * time.Millisecond},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := watchdogConfigOf(tc.b)
			if got.tick != tc.want.tick || got.miss != tc.want.miss || got.megaMiss != tc.want.megaMiss {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
}
