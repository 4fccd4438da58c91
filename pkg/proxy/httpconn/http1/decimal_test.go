package http1

import (
	"math"
	"strconv"
	"testing"
)

// TestAppendDecimal compares AppendDecimal with strconv around each of its
// cases' bounds, and appends after what dst holds.
func TestAppendDecimal(t *testing.T) {
	var ns []int64
	for n := int64(-1100); n <= 120000; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, math.MinInt64, math.MaxInt64, 999999, 1000000, 1<<40)
	for _, n := range ns {
		got := string(AppendDecimal([]byte("x:"), n))
		if want := "x:" + strconv.FormatInt(n, 10); got != want {
			t.Fatalf("AppendDecimal(%d) = %q, want %q", n, got, want)
		}
	}
}
