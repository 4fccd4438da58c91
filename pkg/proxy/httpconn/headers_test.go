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
