package tokenbucket

import (
	"strings"
	"sync"
	"testing"
	"time"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestCompile(t *testing.T) {
	tests := map[string]struct {
		tb   *typev3.TokenBucket
		want Spec
		err  string
	}{
		"tokens_per_fill defaults to 1": {
			tb:   &typev3.TokenBucket{MaxTokens: 2, FillInterval: durationpb.New(time.Second)},
			want: Spec{MaxTokens: 2, PerFill: 1, Fill: time.Second},
		},
		"every field": {
			tb:   &typev3.TokenBucket{MaxTokens: 5, TokensPerFill: wrapperspb.UInt32(3), FillInterval: durationpb.New(50 * time.Millisecond)},
			want: Spec{MaxTokens: 5, PerFill: 3, Fill: 50 * time.Millisecond},
		},
		"fill below 50ms": {
			tb:  &typev3.TokenBucket{MaxTokens: 1, FillInterval: durationpb.New(49 * time.Millisecond)},
			err: "fill_interval: local rate limit token bucket fill timer must be >= 50ms",
		},
		"no fill_interval": {
			tb:  &typev3.TokenBucket{MaxTokens: 1},
			err: "fill_interval: local rate limit token bucket fill timer must be >= 50ms",
		},
		"invalid duration": {
			tb:  &typev3.TokenBucket{MaxTokens: 1, FillInterval: &durationpb.Duration{Seconds: 1, Nanos: -1}},
			err: "fill_interval: ",
		},
		"no tokens per fill": {
			tb:  &typev3.TokenBucket{MaxTokens: 1, TokensPerFill: wrapperspb.UInt32(0), FillInterval: durationpb.New(time.Second)},
			err: "tokens_per_fill: must be above 0",
		},
		"an empty bucket needs no fill": {
			tb:   &typev3.TokenBucket{},
			want: Spec{PerFill: 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Compile(tc.tb)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("Compile = %v, want an error starting %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Compile = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestBucketRefill takes a bucket of 2, refilled with 1 token a second,
// down to nothing, then lets it refill, up to its size at most.
func TestBucketRefill(t *testing.T) {
	b := New(Spec{MaxTokens: 2, PerFill: 1, Fill: time.Second}, 10)
	if b.Max() != 2 || b.Rate() != 1 {
		t.Fatalf("Max, Rate = %d, %v; want 2, 1", b.Max(), b.Rate())
	}
	steps := []struct {
		at        float64
		take      bool
		remaining uint64
		reset     uint64
	}{
		{at: 10, take: true, remaining: 1},
		{at: 10, take: true, remaining: 0, reset: 1},
		{at: 10.5, take: false, remaining: 0},
		{at: 11, take: true, remaining: 0, reset: 1},
		{at: 11.9, take: false, remaining: 0},
		{at: 20, take: true, remaining: 1}, // full again, never more
		{at: 20, take: true, remaining: 0, reset: 1},
	}
	for i, s := range steps {
		if got := b.Consume(s.at); got != s.take {
			t.Fatalf("step %d: Consume(%v) = %v, want %v", i, s.at, got, s.take)
		}
		if got := b.Remaining(s.at); got != s.remaining {
			t.Errorf("step %d: Remaining = %d, want %d", i, got, s.remaining)
		}
		if got := b.ResetSeconds(s.at); got != s.reset {
			t.Errorf("step %d: ResetSeconds = %d, want %d", i, got, s.reset)
		}
	}
}

// TestBucketGiveBack gives tokens back to a bucket: they can be taken
// again at once, and never fill it beyond its size.
func TestBucketGiveBack(t *testing.T) {
	b := New(Spec{MaxTokens: 5, PerFill: 1, Fill: time.Minute}, 0)
	if !b.ConsumeN(0, 4) || b.Remaining(0) != 1 {
		t.Fatalf("after taking 4 of 5: %d left", b.Remaining(0))
	}
	b.Refill(0, 2)
	if got := b.Remaining(0); got != 3 {
		t.Errorf("after giving 2 back: %d left, want 3", got)
	}
	if !b.ConsumeN(0, 3) || b.Consume(0) {
		t.Error("the 3 tokens were not there to take, or a fourth was")
	}
	b.Refill(0, 1000)
	if got := b.Remaining(0); got != 5 {
		t.Errorf("after giving 1000 back: %d left, want the size, 5", got)
	}
}

// TestBucketShare takes tokens as one of several holders of a bucket
// (local_cluster_rate_limit): each token taken costs 1/share of them; and
// reads the Retry-After of a refusal.
func TestBucketShare(t *testing.T) {
	b := New(Spec{MaxTokens: 10, PerFill: 2, Fill: time.Second}, 0)
	// A quarter of the bucket: a request takes 4 tokens.
	for i := range 2 {
		if !b.ConsumeShare(0, 1, 0.25) {
			t.Fatalf("request %d was refused", i)
		}
	}
	if b.Remaining(0) != 2 || b.ConsumeShare(0, 1, 0.25) {
		t.Fatalf("a third request took the last 2 tokens for 4 (%d left)", b.Remaining(0))
	}
	// 2 left, 1 needed: none is to wait for.
	if got := b.RetryAfterSeconds(0); got != 1 {
		t.Errorf("RetryAfterSeconds with tokens left = %d, want 1", got)
	}
	if !b.ConsumeN(0, 2) {
		t.Fatal("the whole share took the last 2 tokens")
	}
	// Empty, 2 tokens a second: half a second, rounded up to 1.
	if got := b.RetryAfterSeconds(0); got != 1 {
		t.Errorf("RetryAfterSeconds = %d, want 1", got)
	}
	slow := New(Spec{MaxTokens: 1, PerFill: 1, Fill: 10 * time.Second}, 0)
	slow.Consume(0)
	if got := slow.RetryAfterSeconds(2.5); got != 8 {
		t.Errorf("RetryAfterSeconds 2.5 s into a 10 s refill = %d, want 8", got)
	}
}

// TestBucketConcurrent takes tokens from many goroutines at once: exactly
// max_tokens of them get one.
func TestBucketConcurrent(t *testing.T) {
	b := New(Spec{MaxTokens: 100, PerFill: 1, Fill: time.Hour}, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if b.Consume(1) {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if ok != 100 {
		t.Errorf("%d tokens taken, want 100", ok)
	}
}

func TestClock(t *testing.T) {
	at := time.Unix(100, 0)
	c := NewClock(func() time.Time { return at })
	at = at.Add(1500 * time.Millisecond)
	if got := c.Seconds(); got != 1.5 {
		t.Errorf("Seconds = %v, want 1.5", got)
	}
	if NewClock(nil).Seconds() < 0 {
		t.Error("the default clock runs backwards")
	}
}
