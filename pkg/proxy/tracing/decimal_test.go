package tracing

import (
	"strconv"
	"testing"
)

// TestAppendUintMatchesStrconv: every value around the digit-count
// boundaries, and every value below 100,000, is written as strconv writes
// it, after existing bytes.
func TestAppendUintMatchesStrconv(t *testing.T) {
	check := func(v uint64) {
		t.Helper()
		got := string(AppendUint([]byte("x"), v))
		if want := "x" + strconv.FormatUint(v, 10); got != want {
			t.Fatalf("AppendUint(%d) = %q, want %q", v, got, want)
		}
	}
	for v := range uint64(100000) {
		check(v)
	}
	for _, v := range []uint64{1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, 1<<64 - 1} {
		check(v)
	}
}

// BenchmarkAppendUint writes a span's three numbers: status code, request
// and response sizes.
func BenchmarkAppendUint(b *testing.B) {
	var buf []byte
	for b.Loop() {
		buf = AppendUint(buf[:0], 200)
		buf = AppendUint(buf[:0], 0)
		buf = AppendUint(buf[:0], 1234)
	}
}

// BenchmarkAppendUintStrconv is BenchmarkAppendUint through strconv, for
// comparison.
func BenchmarkAppendUintStrconv(b *testing.B) {
	var buf []byte
	for b.Loop() {
		buf = strconv.AppendUint(buf[:0], 200, 10)
		buf = strconv.AppendUint(buf[:0], 0, 10)
		buf = strconv.AppendUint(buf[:0], 1234, 10)
	}
}
