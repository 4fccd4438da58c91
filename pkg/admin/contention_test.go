package admin

import (
	"errors"
	"testing"
)

func TestContentionDisabled(t *testing.T) {
	ta := newTestAdmin(t)
	checkResponseGolden(t, "contention-disabled", serve(t, ta.Handler(), request{target: "/contention"}))
}

// TestContention feeds successive totals of the mutex profile and checks
// current_wait_cycles, the mean wait per contention since the last request.
func TestContention(t *testing.T) {
	ta := newTestAdmin(t, func(o *Options) { o.MutexTracing = true })
	type totals struct {
		count, cycles int64
		err           error
	}
	var next totals
	ta.contention.read = func() (int64, int64, error) { return next.count, next.cycles, next.err }

	steps := []struct {
		name   string
		totals totals
	}{
		{"contention-none", totals{}},
		{"contention-first", totals{count: 10, cycles: 1000}},     // current 100
		{"contention-second", totals{count: 15, cycles: 2000}},    // current 200
		{"contention-unchanged", totals{count: 15, cycles: 2000}}, // current 0
		{"contention-read-error", totals{err: errors.New("read mutex profile: it kept growing while being read")}},
	}
	for _, s := range steps {
		next = s.totals
		checkResponseGolden(t, s.name, serve(t, ta.Handler(), request{target: "/contention"}))
	}
}

func TestReadMutexProfile(t *testing.T) {
	count, cycles, err := readMutexProfile()
	if err != nil {
		t.Fatalf("readMutexProfile: %v", err)
	}
	if count < 0 || cycles < 0 {
		t.Errorf("readMutexProfile = %d, %d; want non-negative totals", count, cycles)
	}
}
