package httpconn

import (
	"testing"
	"time"
)

func TestJittered(t *testing.T) {
	for _, tc := range []struct {
		d      time.Duration
		pct    float64
		random float64
		want   time.Duration
	}{
		{10 * time.Second, 0, 0.9, 10 * time.Second},
		{10 * time.Second, 20, 0, 10 * time.Second},
		{10 * time.Second, 20, 0.5, 11 * time.Second},
		{10 * time.Second, 100, 0.999, 10*time.Second + 9990*time.Millisecond},
		{0, 50, 0.5, 0},
	} {
		if got := jittered(tc.d, tc.pct, func() float64 { return tc.random }); got != tc.want {
			t.Errorf("jittered(%v, %v%%, %v) = %v, want %v", tc.d, tc.pct, tc.random, got, tc.want)
		}
	}
}
