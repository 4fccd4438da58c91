package httpconn

import (
	"math/rand/v2"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// TestHeaderListGetSet checks the one-pass look-up of several headers
// against Get, name by name, on random lists with repeated, empty and
// absent fields.
func TestHeaderListGetSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	pool := []string{"user-agent", "x-request-id", "x-forwarded-for", "host", "accept", "x-a", "x-b"}
	for round := range 5000 {
		var h headerList
		for range rng.IntN(10) {
			h.fields = append(h.fields, field{pool[rng.IntN(len(pool))], []string{"", "v", "w,x"}[rng.IntN(3)]})
		}
		var picked []string
		for _, j := range rng.Perm(len(pool))[:1+rng.IntN(4)] {
			picked = append(picked, pool[j])
		}
		names := accesslog.NewHeaderNames(picked...)
		got := h.GetSet(&names)
		if got.Found>>len(picked) != 0 {
			t.Fatalf("round %d: found %b for %d names", round, got.Found, len(picked))
		}
		for i, name := range picked {
			want, ok := h.Get(name)
			if v, found := got.Has(i); found != ok || v != want {
				t.Fatalf("round %d, fields %v: %s is %q, %v; Get says %q, %v", round, h.fields, name, v, found, want, ok)
			}
		}
	}
}

// BenchmarkHeaderListDefaultFormat finds the default access-log format's
// four request headers in a proxied request's fields, in one pass
// (GetSet) and with one Get per header.
func BenchmarkHeaderListDefaultFormat(b *testing.B) {
	var h headerList
	for _, f := range [][2]string{
		{"host", "127.0.0.1"}, {"user-agent", "h1count"}, {"accept", "*/*"}, {"x-forwarded-proto", "http"},
		{"x-request-id", "0b5a9e4c-5d5e-4f7e-8a39-44b2c2b1b0b7"}, {"x-envoy-expected-rq-timeout-ms", "15000"},
		{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"content-type", "application/json"},
	} {
		h.fields = append(h.fields, field{f[0], f[1]})
	}
	names := []string{"x-envoy-original-path", "x-forwarded-for", "user-agent", "x-request-id"}
	set := accesslog.NewHeaderNames(names...)
	b.Run("GetSet", func(b *testing.B) {
		for b.Loop() {
			if v := h.GetSet(&set); v.Found != 0b1100 {
				b.Fatalf("found %b", v.Found)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			found := 0
			for _, name := range names {
				if _, ok := h.Get(name); ok {
					found++
				}
			}
			if found != 2 {
				b.Fatalf("found %d", found)
			}
		}
	})
}
