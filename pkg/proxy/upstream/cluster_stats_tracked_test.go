package upstream

import "testing"

// TestPercentOfTimeout checks Envoy's percentageOfTimeout: whole
// milliseconds, and an infinite (0) timeout never used.
func TestPercentOfTimeout(t *testing.T) {
	for _, tc := range []struct {
		used, timeout int64
		want          uint64
	}{
		{50, 100, 50},
		{100, 100, 100},
		{250, 100, 250},
		{1, 3, 33},
		{500, 0, 0},
		{0, 100, 0},
	} {
		if got := PercentOfTimeout(tc.used, tc.timeout); got != tc.want {
			t.Errorf("PercentOfTimeout(%d, %d) = %d, want %d", tc.used, tc.timeout, got, tc.want)
		}
	}
}
