package cache

import (
	"testing"

	cachev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cache/v3"
)

func TestRangeOf(t *testing.T) {
	whole := byteRange{whole: true}
	unsat := byteRange{unsatisfiable: true}
	for _, tc := range []struct {
		h    string
		n    int
		want byteRange
	}{
		{"bytes=0-4", 10, byteRange{begin: 0, end: 5}},
		{"bytes=2-", 10, byteRange{begin: 2, end: 10}},
		{"bytes=0-", 10, whole},
		{"bytes=0-99", 10, whole},
		{"bytes=-3", 10, byteRange{begin: 7, end: 10}},
		{"bytes=-10", 10, whole},
		{"bytes=-0", 10, unsat},
		{"bytes=10-12", 10, unsat},
		{"bytes=0-1", 0, unsat},
		{"bytes=0-1,3-4", 10, whole},
		{"bytes=5-2", 10, whole},
		{"bytes=-", 10, whole},
		{"items=0-1", 10, whole},
		{"bytes= 0-1", 10, whole},
	} {
		if got := rangeOf(tc.h, tc.n); got != tc.want {
			t.Errorf("%q of %d: %+v, want %+v", tc.h, tc.n, got, tc.want)
		}
	}
}

func TestRangeHits(t *testing.T) {
	c, store, _ := compile(t, &cachev3.CacheConfig{})
	exchange(c, "GET", "/r", nil, 200, []string{"cache-control", "max-age=60"}, "0123456789")
	if len(store.m) != 1 {
		t.Fatal("not stored")
	}
	for _, tc := range []struct {
		rng, body, contentRange string
		status                  int
	}{
		{"bytes=2-4", "234", "bytes 2-4/10", 206},
		{"bytes=-2", "89", "bytes 8-9/10", 206},
		{"bytes=20-", "", "bytes */10", 416},
		{"bytes=0-", "0123456789", "", 200},
	} {
		s := exchange(c, "GET", "/r", []string{"range", tc.rng}, 0, nil, "")
		if s.Replaced == nil || s.Replaced.Status != tc.status || s.Replaced.Body != tc.body {
			t.Errorf("%s: %+v", tc.rng, s.Replaced)
			continue
		}
		if got, _ := s.RespHeaders.Get("content-range"); got != tc.contentRange {
			t.Errorf("%s: content-range %q", tc.rng, got)
		}
	}
	// A range request that misses goes upstream, and its partial
	// response is not stored.
	exchange(c, "GET", "/other", []string{"range", "bytes=0-1"}, 206, []string{"cache-control", "max-age=60"}, "01")
	if len(store.m) != 1 {
		t.Error("a partial response was stored")
	}
}
