package stats

import (
	"maps"
	"slices"
	"testing"
	"unsafe"
)

// TestSegmentCacheChecksTheText makes stats from a name whose memory
// changes between lookups, as a view of a reused buffer does: the segment
// cache, keyed by the name's address, must not answer with the segment the
// old bytes had.
func TestSegmentCacheChecksTheText(t *testing.T) {
	s := NewStore()
	sc := s.Scope("cluster.c0.")
	buf := []byte("upstream_rq_alpha")
	name := unsafe.String(unsafe.SliceData(buf), len(buf))
	sc.Counter(name).Add(1)
	copy(buf, "upstream_rq_bravo")
	sc.Counter(name).Add(2)
	// The same address and text again: a cache hit.
	sc.Counter(name).Add(3)
	// Another scope: the prefix differs, the cached last segment is
	// shared.
	s.Scope("cluster.c1.").Counter(name).Add(4)

	want := []string{"cluster.c0.upstream_rq_alpha", "cluster.c0.upstream_rq_bravo", "cluster.c1.upstream_rq_bravo"}
	if got := s.CounterNames(); !slices.Equal(got, want) {
		t.Fatalf("counters %q, want %q", got, want)
	}
	got := map[string]uint64{}
	for _, name := range want {
		got[name] = s.Counter(name).Value()
	}
	wantValues := map[string]uint64{
		"cluster.c0.upstream_rq_alpha": 1,
		"cluster.c0.upstream_rq_bravo": 5,
		"cluster.c1.upstream_rq_bravo": 4,
	}
	if !maps.Equal(got, wantValues) {
		t.Errorf("values %v, want %v", got, wantValues)
	}
}
