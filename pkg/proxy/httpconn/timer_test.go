package httpconn

import (
	"testing"
	"time"
)

func TestDeadlineNeed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		set   bool      // a deadline was set before
		at    time.Time // the deadline set before
		d     time.Time
		exact bool
		want  bool
	}{
		"first arm":                 {d: t0, want: true},
		"same deadline":             {set: true, at: t0, d: t0, want: false},
		"a little later is kept":    {set: true, at: t0, d: t0.Add(500 * time.Millisecond), want: false},
		"a little later, exact":     {set: true, at: t0, d: t0.Add(500 * time.Millisecond), exact: true, want: true},
		"much later is pushed back": {set: true, at: t0, d: t0.Add(2 * time.Second), want: true},
		"earlier must be set":       {set: true, at: t0, d: t0.Add(-time.Millisecond), want: true},
		"none after one":            {set: true, at: t0, d: time.Time{}, want: true},
		"one after none":            {set: true, at: time.Time{}, d: t0, want: true},
		"none after none":           {set: true, at: time.Time{}, d: time.Time{}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dl := deadline{at: tc.at, set: tc.set}
			if got := dl.need(tc.d, tc.exact); got != tc.want {
				t.Fatalf("need = %v, want %v", got, tc.want)
			}
			if tc.want && !dl.at.Equal(tc.d) {
				t.Errorf("recorded %v after arming %v", dl.at, tc.d)
			}
		})
	}
	t.Run("forget forces the next arm", func(t *testing.T) {
		dl := deadline{at: t0, set: true}
		dl.forget()
		if !dl.need(t0, false) {
			t.Fatal("need after forget = false")
		}
	})
}

func TestUpstreamTimer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		timer     upstreamTimer
		now       time.Time
		wantAt    time.Time
		wantStale time.Time // a later time at which it is stale
	}{
		"route timeout first": {
			timer: upstreamTimer{hard: t0.Add(15 * time.Second), idle: 5 * time.Minute}, now: t0,
			wantAt: t0.Add(15 * time.Second),
		},
		"idle first": {
			timer: upstreamTimer{hard: t0.Add(time.Hour), idle: time.Minute}, now: t0,
			wantAt: t0.Add(time.Minute), wantStale: t0.Add(2 * time.Second),
		},
		"no route timeout": {
			timer: upstreamTimer{idle: time.Minute}, now: t0,
			wantAt: t0.Add(time.Minute), wantStale: t0.Add(2 * time.Second),
		},
		"neither": {timer: upstreamTimer{}, now: t0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tm := tc.timer
			if got := tm.deadline(tc.now); !got.Equal(tc.wantAt) {
				t.Fatalf("deadline = %v, want %v", got, tc.wantAt)
			}
			if tm.stale(tc.now) {
				t.Error("stale right after arming")
			}
			if !tc.wantStale.IsZero() && !tm.stale(tc.wantStale) {
				t.Errorf("not stale at %v", tc.wantStale)
			}
			if tc.wantStale.IsZero() && tm.stale(tc.now.Add(time.Hour)) {
				t.Error("stale although the idle part cannot move")
			}
			if tm.hardExpired(tc.now) {
				t.Error("hard limit expired at once")
			}
		})
	}
}

func TestSlackOf(t *testing.T) {
	tests := map[time.Duration]time.Duration{
		0:                      0,
		400 * time.Millisecond: 20 * time.Millisecond,
		2 * time.Second:        100 * time.Millisecond,
		20 * time.Second:       time.Second,
		5 * time.Minute:        time.Second,
	}
	for timeout, want := range tests {
		if got := slackOf(timeout); got != want {
			t.Errorf("slackOf(%v) = %v, want %v", timeout, got, want)
		}
	}
}

func TestDeadlineNeedWithin(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const slack = 100 * time.Millisecond
	tests := map[string]struct {
		d     time.Time
		slack time.Duration
		want  bool
	}{
		"within the slack is kept":      {d: t0.Add(99 * time.Millisecond), slack: slack, want: false},
		"at the slack is pushed back":   {d: t0.Add(slack), slack: slack, want: true},
		"exact always moves":            {d: t0.Add(time.Millisecond), slack: 0, want: true},
		"earlier is set whatever slack": {d: t0.Add(-time.Millisecond), slack: time.Hour, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dl := deadline{at: t0, set: true}
			if got := dl.needWithin(tc.d, tc.slack); got != tc.want {
				t.Fatalf("needWithin = %v, want %v", got, tc.want)
			}
			if !tc.want && !dl.at.Equal(t0) {
				t.Errorf("a kept deadline was recorded as %v", dl.at)
			}
		})
	}
}

// TestShorterTimeout checks that one deadline after the shorter timeout is
// the earliest of the two deadlines counted from the same instant, 0 (or
// less) meaning no timeout, as armWait relies on.
func TestShorterTimeout(t *testing.T) {
	now := time.Now()
	ds := []time.Duration{-time.Second, 0, time.Millisecond, time.Second, time.Hour}
	for _, a := range ds {
		for _, b := range ds {
			got := after(now, shorterTimeout(a, b))
			want := earliest(after(now, a), after(now, b))
			if !got.Equal(want) {
				t.Errorf("shorterTimeout(%v, %v): deadline %v, want %v", a, b, got, want)
			}
		}
	}
}
