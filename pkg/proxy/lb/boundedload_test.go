package lb

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// fixedTable sends every hash to one host.
type fixedTable struct{ h *upstream.Host }

func (f fixedTable) at(uint64) *upstream.Host { return f.h }

func TestBoundedLoad(t *testing.T) {
	hosts := ports("1", "2", "3", "4")
	hot := hosts[0]
	set := func(active ...int64) {
		for i, n := range active {
			hosts[i].Stats.RqActive.Store(n)
		}
	}
	b := newBoundedLoad(fixedTable{hot}, hosts, 150, nil, func() uint64 { return 7 })
	ctx := hashed

	// 4 active in all: the bound is ceil(((4+1)x150+99)/100 / 4) = 2.
	set(2, 1, 1, 0)
	if got := b.Pick(ctx(1)); got != hot {
		t.Fatalf("a host at its bound was left for %s", got.Address)
	}
	set(3, 1, 0, 0)
	first := b.Pick(ctx(1))
	if first == hot {
		t.Fatal("a host over its bound was chosen")
	}
	// The same hash probes in the same order.
	for range 10 {
		if got := b.Pick(ctx(1)); got != first {
			t.Fatalf("hash 1 went to %s then %s", first.Address, got.Address)
		}
	}
	// Other hashes probe in other orders: over many hashes, every host
	// within its bound is taken.
	seen := map[*upstream.Host]bool{}
	for h := range uint64(200) {
		seen[b.Pick(ctx(h))] = true
	}
	if len(seen) != 3 || seen[hot] {
		t.Fatalf("hosts taken over 200 hashes: %d (hot one: %v)", len(seen), seen[hot])
	}
	// Every host over its bound: the least loaded. The cluster's active
	// requests come from its upstream_rq_active gauge when it has one
	// (here 0: every host's bound is 1).
	active := stats.NewStore().Gauge("cluster.c.upstream_rq_active")
	b = newBoundedLoad(fixedTable{hot}, hosts, 150, active, nil)
	set(9, 8, 7, 9)
	if got := b.Pick(ctx(1)); got != hosts[2] {
		t.Fatalf("all over their bound: chose %s, want the least loaded %s", got.Address, hosts[2].Address)
	}
	set(0, 0, 0, 0)
}

// TestBoundedLoadSpreadsAHotKey runs requests of one key that stay
// active: no host ever exceeds its bound by more than the one request
// the bound's rounding allows.
func TestBoundedLoadSpreadsAHotKey(t *testing.T) {
	hosts := ports("1", "2", "3", "4", "5")
	r := testRing(hosts, 1024, DefaultMaxRingSize, false, false)
	b := newBoundedLoad(r, hosts, 125, nil, nil)
	pc := hashed(42)
	for n := range 500 {
		h := b.Pick(pc)
		h.Stats.RqActive.Add(1)
		limit := ((int64(n)+1)*125+99)/100/int64(len(hosts)) + 2
		for _, x := range hosts {
			if a := x.Stats.RqActive.Load(); a > limit {
				t.Fatalf("after %d requests %s has %d active, bound about %d", n+1, x.Address, a, limit)
			}
		}
	}
}
