package listener

import (
	"sync"
	"testing"
	"time"
)

// fakeTime is a manual clock with timers that fire only when the test
// advances it.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
	fired   bool
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeTime) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeTime) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped && !t.fired
		t.stopped = true
		return was
	}
}

// Advance moves the clock and runs the timers that became due.
func (c *fakeTime) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.fired && !t.at.After(c.now) {
			t.fired = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// sequence returns a Random function cycling through values.
func sequence(values ...float64) func() float64 {
	i := 0
	return func() float64 {
		v := values[i%len(values)]
		i++
		return v
	}
}

func TestDrainCloseGradual(t *testing.T) {
	clock := newFakeTime()
	d := newDrain(DrainOptions{
		Time:   100 * time.Second,
		Now:    clock.Now,
		Random: sequence(0.05, 0.25, 0.50, 0.75, 0.95),
	}, false)
	closes := func() int { return closingShare(d) }
	if d.Draining() || closes() != 0 {
		t.Fatal("a drain that has not started closes connections")
	}
	if !d.Start() {
		t.Fatal("Start did not start the drain")
	}
	if !d.Draining() {
		t.Fatal("Draining is false after Start")
	}
	// The share of closing answers is the elapsed fraction of the drain
	// time: each draw below that fraction closes.
	steps := []struct {
		name    string
		advance time.Duration
		want    int
	}{
		{"start", 0, 0},
		{"10%", 10 * time.Second, 1},
		{"30%", 20 * time.Second, 2},
		{"60%", 30 * time.Second, 3},
		{"99%", 39 * time.Second, 5},
		{"end", 1 * time.Second, 5},
		{"past the end", 50 * time.Second, 5},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		if got := closes(); got != s.want {
			t.Errorf("%s: %d of 5 answers close, want %d", s.name, got, s.want)
		}
	}
	if d.Start() {
		t.Error("a second Start restarted the drain")
	}
}

// closingShare counts the closing answers among five draws of d, whose
// Random cycles through 0.05, 0.25, 0.50, 0.75 and 0.95.
func closingShare(d *Drain) int {
	n := 0
	for range 5 {
		if d.DrainClose() {
			n++
		}
	}
	return n
}

func TestDrainStartWithin(t *testing.T) {
	draws := []float64{0.05, 0.25, 0.50, 0.75, 0.95}
	t.Run("grows over the given span, not the drain time", func(t *testing.T) {
		clock := newFakeTime()
		d := newDrain(DrainOptions{Time: 600 * time.Second, Now: clock.Now, Random: sequence(draws...)}, false)
		if !d.StartWithin(10 * time.Second) {
			t.Fatal("StartWithin did not start the drain")
		}
		for _, s := range []struct {
			advance time.Duration
			want    int
		}{{0, 0}, {3 * time.Second, 2}, {3 * time.Second, 3}, {4 * time.Second, 5}} {
			clock.Advance(s.advance)
			if got := closingShare(d); got != s.want {
				t.Errorf("after %v more: %d of 5 answers close, want %d", s.advance, got, s.want)
			}
		}
		if d.StartWithin(time.Second) || d.Start() {
			t.Error("a drain under way was started again")
		}
	})
	t.Run("shortens a drain under way, never lengthens it", func(t *testing.T) {
		clock := newFakeTime()
		d := newDrain(DrainOptions{Time: 100 * time.Second, Now: clock.Now, Random: sequence(draws...)}, false)
		d.Start()
		clock.Advance(10 * time.Second) // 10% of the drain time
		if got := closingShare(d); got != 1 {
			t.Fatalf("%d of 5 answers close at 10%%, want 1", got)
		}
		d.StartWithin(time.Hour) // would end later: ignored
		if got := closingShare(d); got != 1 {
			t.Fatalf("a longer span changed the share: %d of 5 close, want 1", got)
		}
		d.StartWithin(10 * time.Second) // now at 10 s of a 20 s span
		if got := closingShare(d); got != 2 {
			t.Errorf("%d of 5 answers close halfway through the shortened drain, want 2", got)
		}
		clock.Advance(10 * time.Second)
		if got := closingShare(d); got != 5 {
			t.Errorf("%d of 5 answers close at the end of the shortened drain, want 5", got)
		}
	})
	t.Run("immediate closes every answer at once", func(t *testing.T) {
		d := newDrain(DrainOptions{Time: time.Hour, Immediate: true, Random: sequence(draws...)}, false)
		d.StartWithin(time.Hour)
		if got := closingShare(d); got != 5 {
			t.Errorf("%d of 5 answers close, want 5", got)
		}
	})
}

func TestDrainCloseCases(t *testing.T) {
	tests := map[string]struct {
		opts       DrainOptions
		modifyOnly bool
		start      bool
		want       bool
	}{
		"not draining":                       {want: false},
		"immediate from the start":           {opts: DrainOptions{Time: time.Hour, Immediate: true}, start: true, want: true},
		"gradual at the start":               {opts: DrainOptions{Time: time.Hour}, start: true, want: false},
		"zero drain time":                    {opts: DrainOptions{Time: 0}, start: true, want: true},
		"health check failed":                {opts: DrainOptions{Time: time.Hour, HealthCheckFailed: func() bool { return true }}, want: true},
		"health check failed, modify only":   {opts: DrainOptions{Time: time.Hour, HealthCheckFailed: func() bool { return true }}, modifyOnly: true, want: false},
		"health check passing":               {opts: DrainOptions{Time: time.Hour, HealthCheckFailed: func() bool { return false }}, want: false},
		"modify only still drains on demand": {opts: DrainOptions{Immediate: true}, modifyOnly: true, start: true, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clock := newFakeTime()
			tc.opts.Now = clock.Now
			tc.opts.Random = sequence(0.5)
			d := newDrain(tc.opts, tc.modifyOnly)
			if tc.start {
				d.Start()
			}
			if got := d.DrainClose(); got != tc.want {
				t.Errorf("DrainClose = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDrainAfterAndCancel(t *testing.T) {
	clock := newFakeTime()
	d := newDrain(DrainOptions{Time: 10 * time.Second, Now: clock.Now, AfterFunc: clock.AfterFunc}, false)
	var ran []string
	d.Start()
	d.After(func() { ran = append(ran, "first") })
	clock.Advance(4 * time.Second)
	d.After(func() { ran = append(ran, "second") }) // due at 14s
	clock.Advance(6 * time.Second)
	if len(ran) != 1 || ran[0] != "first" {
		t.Fatalf("after 10s ran %v, want [first]", ran)
	}
	d.Cancel()
	clock.Advance(time.Hour)
	if len(ran) != 1 {
		t.Fatalf("a cancelled completion ran: %v", ran)
	}
	d.After(func() { ran = append(ran, "third") })
	clock.Advance(10 * time.Second)
	if len(ran) != 2 || ran[1] != "third" {
		t.Fatalf("ran %v, want [first third]", ran)
	}
}

func TestDrainDefaults(t *testing.T) {
	d := newDrain(DrainOptions{Time: time.Hour}, false)
	if d.opts.Now == nil || d.opts.Random == nil || d.opts.AfterFunc == nil {
		t.Fatal("defaults are not filled in")
	}
	done := make(chan struct{})
	cancel := d.opts.AfterFunc(time.Hour, func() { close(done) })
	if !cancel() {
		t.Error("the default AfterFunc could not be cancelled")
	}
	if r := d.opts.Random(); r < 0 || r >= 1 {
		t.Errorf("the default Random returned %v, outside [0, 1)", r)
	}
}

// BenchmarkDrainClose measures the per-response drain decision: outside a
// drain, and during a gradual one (a clock read and a random draw).
func BenchmarkDrainClose(b *testing.B) {
	for _, draining := range []bool{false, true} {
		name := "idle"
		if draining {
			name = "gradual"
		}
		b.Run(name, func(b *testing.B) {
			d := newDrain(DrainOptions{Time: time.Hour, HealthCheckFailed: func() bool { return false }}, false)
			if draining {
				d.Start()
			}
			for b.Loop() {
				d.DrainClose()
			}
		})
	}
}
