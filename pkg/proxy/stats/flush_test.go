package stats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeTicker is a flush timer the test drives.
type fakeTicker struct {
	c       chan time.Time
	stopped chan struct{}
	period  time.Duration
}

func newFakeTicker() *fakeTicker {
	return &fakeTicker{c: make(chan time.Time), stopped: make(chan struct{})}
}

func (f *fakeTicker) newTicker(d time.Duration) (<-chan time.Time, func()) {
	f.period = d
	return f.c, func() { close(f.stopped) }
}

// countingSink signals each flush.
type countingSink struct{ flushed chan *Snapshot }

func (c countingSink) Flush(sn *Snapshot) error {
	c.flushed <- sn
	return nil
}

// deltaSink records what the last flush handed it.
type deltaSink struct {
	counters map[string]uint64
	gauges   map[string]int64
	hists    []string
}

func (r *deltaSink) Flush(sn *Snapshot) error {
	r.counters, r.gauges, r.hists = map[string]uint64{}, map[string]int64{}, nil
	sn.Counters(func(name []byte, delta, _ uint64) { r.counters[string(name)] = delta })
	sn.Gauges(func(name []byte, v int64) { r.gauges[string(name)] = v })
	sn.Histograms(func(name []byte, _ *Histogram) { r.hists = append(r.hists, string(name)) })
	return nil
}

// runFlusher runs f until the returned stop is called; stop waits for Run
// to return and checks its result.
func runFlusher(t *testing.T, f *Flusher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}

func TestFlusherTimer(t *testing.T) {
	s := NewStore()
	tk := newFakeTicker()
	sink := countingSink{flushed: make(chan *Snapshot, 1)}
	hooked := 0
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{NewTicker: tk.newTicker})
	f.AddHook(func() { hooked++ })
	stop := runFlusher(t, f)
	for i := range 3 {
		tk.c <- time.Unix(int64(i)*5, 0)
		<-sink.flushed
	}
	stop()
	<-tk.stopped
	if tk.period != DefaultFlushInterval {
		t.Errorf("period %v, want %v", tk.period, DefaultFlushInterval)
	}
	if hooked != 3 {
		t.Errorf("hook ran %d times, want 3", hooked)
	}
}

// TestFlusherCountsMissedTicks: ticks carry their scheduled time; a gap of
// several intervals means the timer dropped ticks while a flush ran.
func TestFlusherCountsMissedTicks(t *testing.T) {
	cases := map[string]struct {
		ticks []time.Duration // tick times from an origin
		want  uint64
	}{
		"regular ticks":               {ticks: []time.Duration{0, 5 * time.Second, 10 * time.Second}, want: 0},
		"a little late is not missed": {ticks: []time.Duration{0, 7 * time.Second, 12 * time.Second}, want: 0},
		"two ticks skipped":           {ticks: []time.Duration{0, 15 * time.Second}, want: 2},
		"skips add up":                {ticks: []time.Duration{0, 10 * time.Second, 25 * time.Second}, want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore()
			dropped := s.Counter("server.dropped_stat_flushes")
			tk := newFakeTicker()
			sink := countingSink{flushed: make(chan *Snapshot, 1)}
			f := NewFlusher(s, []Sink{sink}, FlusherOptions{NewTicker: tk.newTicker, Dropped: dropped})
			stop := runFlusher(t, f)
			origin := time.Unix(1000, 0)
			for _, d := range tc.ticks {
				tk.c <- origin.Add(d)
				<-sink.flushed
			}
			stop()
			if got := dropped.Value(); got != tc.want {
				t.Errorf("dropped flushes = %d, want %d", got, tc.want)
			}
		})
	}
}

// blockingSink holds the first flush until released.
type blockingSink struct {
	entered, release chan struct{}
}

func (b blockingSink) Flush(*Snapshot) error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

func TestFlusherDropsAFlushWhileOneRuns(t *testing.T) {
	s := NewStore()
	dropped := s.Counter("server.dropped_stat_flushes")
	sink := blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{Dropped: dropped})
	first := make(chan error, 1)
	go func() { first <- f.Flush() }()
	<-sink.entered
	if err := f.Flush(); err != nil {
		t.Errorf("concurrent Flush: %v", err)
	}
	if got := dropped.Value(); got != 1 {
		t.Errorf("dropped flushes = %d, want 1", got)
	}
	close(sink.release)
	if err := <-first; err != nil {
		t.Errorf("first Flush: %v", err)
	}
	// Once the first flush is over, flushing works again.
	go func() { <-sink.entered }()
	if err := f.Flush(); err != nil {
		t.Errorf("later Flush: %v", err)
	}
	if got := dropped.Value(); got != 1 {
		t.Errorf("dropped flushes after a normal flush = %d, want 1", got)
	}
}

func TestFlusherOnAdminHasNoTimer(t *testing.T) {
	s := NewStore()
	f := NewFlusher(s, nil, FlusherOptions{OnAdmin: true, Interval: time.Second,
		NewTicker: func(time.Duration) (<-chan time.Time, func()) {
			t.Error("a timer was made with stats_flush_on_admin")
			return nil, func() {}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !f.OnAdmin() || f.Interval() != time.Second {
		t.Errorf("OnAdmin %v Interval %v", f.OnAdmin(), f.Interval())
	}
}

func TestSnapshotHasUsedStatsOnly(t *testing.T) {
	s := NewStore()
	s.Counter("used").Add(2)
	s.Counter("unused")
	s.Gauge("g").Set(-3)
	s.Gauge("g_unused")
	s.Histogram("h").Record(1)
	s.Histogram("h_unused")
	sink := &deltaSink{}
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{})
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint64{"used": 2}, sink.counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"g": -3}, sink.gauges); diff != "" {
		t.Errorf("gauges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"h"}, sink.hists); diff != "" {
		t.Errorf("histograms (-want +got):\n%s", diff)
	}
	if got := s.Histogram("h").IntervalStatistics().SampleCount; got != 1 {
		t.Errorf("flush did not roll the histogram interval: %d", got)
	}
	// A reset between flushes does not change what sinks receive.
	s.Counter("used").Add(5)
	s.ResetCounters()
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := sink.counters["used"]; got != 5 {
		t.Errorf("delta after /reset_counters = %d, want 5", got)
	}
}

// closingSink records Close.
type closingSink struct {
	closed bool
	err    error
}

func (c *closingSink) Flush(*Snapshot) error { return nil }
func (c *closingSink) Close() error          { c.closed = true; return c.err }

func TestFlusherCloseClosesSinks(t *testing.T) {
	boom := errors.New("boom")
	a, b := &closingSink{}, &closingSink{err: boom}
	f := NewFlusher(NewStore(), []Sink{a, &deltaSink{}, b}, FlusherOptions{})
	if err := f.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want the failing sink's error", err)
	}
	if !a.closed || !b.closed {
		t.Errorf("closed: %v %v, want both", a.closed, b.closed)
	}
}

func TestFlushReturnsSinkErrors(t *testing.T) {
	boom := errors.New("unreachable")
	ok := &deltaSink{}
	f := NewFlusher(NewStore(), []Sink{failingSink{boom}, ok}, FlusherOptions{})
	if err := f.Flush(); !errors.Is(err, boom) {
		t.Errorf("Flush = %v, want %v", err, boom)
	}
	if ok.counters == nil {
		t.Error("a failing sink stopped the next one")
	}
}

type failingSink struct{ err error }

func (f failingSink) Flush(*Snapshot) error { return f.err }
