package lb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// updatePolicies are the policies the update tests run, with whether
// their hosts get different weights.
var updatePolicies = []struct {
	name    string
	p       Policy
	weights bool
}{
	{"round-robin", roundRobinPolicy{}, false},
	{"round-robin-weighted", roundRobinPolicy{}, true},
	{"least-request", leastRequestPolicy{choices: defaultChoiceCount, bias: runtimeDouble{def: 1}}, false},
	{"least-request-full-scan", leastRequestPolicy{choices: defaultChoiceCount, fullScan: true, bias: runtimeDouble{def: 1}}, false},
	{"least-request-weighted", leastRequestPolicy{choices: defaultChoiceCount, bias: runtimeDouble{def: 1}}, true},
	{"random", randomPolicy{}, false},
	{"ring-hash", ringHashPolicy{minSize: 256, maxSize: 1024}, true},
	{"maglev", maglevPolicy{tableSize: 307}, true},
}

// hostChurn makes the hosts of random updates: three priority levels,
// hosts mostly healthy (a few unhealthy or degraded), weights 1 or, when
// weighted, 1 to 3.
type hostChurn struct {
	r        *rand.Rand
	weighted bool
	next     int
	// decorate, when set, finishes each new host (its metadata).
	decorate func(*upstream.Host)
}

// host is a new host at level p.
func (hc *hostChurn) host(p int) *upstream.Host {
	hc.next++
	h := &upstream.Host{Address: fmt.Sprintf("10.0.0.%d:80", hc.next), Priority: uint32(p), Weight: 1}
	if hc.weighted {
		h.Weight = uint32(1 + hc.r.IntN(3))
	}
	switch hc.r.IntN(20) {
	case 0:
		h.ConfigHealth = corev3.HealthStatus_UNHEALTHY
	case 1:
		h.ConfigHealth = corev3.HealthStatus_DEGRADED
	}
	if hc.decorate != nil {
		hc.decorate(h)
	}
	return h
}

// update is a random change of levels: nothing, a reordering of one
// level, or some hosts removed and some added; the new levels (new
// slices, as an EDS update builds them) and the change.
func (hc *hostChurn) update(levels [][]*upstream.Host) ([][]*upstream.Host, *Change) {
	out := make([][]*upstream.Host, len(levels))
	for i := range levels {
		out[i] = slices.Clone(levels[i])
	}
	ch := &Change{}
	switch k := hc.r.IntN(10); {
	case k == 0:
		// The same hosts again.
	case k == 1:
		p := hc.r.IntN(len(out))
		hc.r.Shuffle(len(out[p]), func(i, j int) { out[p][i], out[p][j] = out[p][j], out[p][i] })
	default:
		for range hc.r.IntN(4) {
			p := hc.r.IntN(len(out))
			if len(out[p]) == 0 {
				continue
			}
			i := hc.r.IntN(len(out[p]))
			ch.Removed = append(ch.Removed, out[p][i])
			out[p] = slices.Delete(out[p], i, i+1)
		}
		for range hc.r.IntN(4) {
			p := hc.r.IntN(len(out))
			h := hc.host(p)
			ch.Added = append(ch.Added, h)
			i := hc.r.IntN(len(out[p]) + 1)
			out[p] = slices.Insert(out[p], i, h)
		}
	}
	return out, ch
}

// TestUpdateMatchesRebuild is a differential test: on random sequences
// of host set updates, the balancer Update builds from the change equals
// the one built again from the whole host set (carrying round robin's
// place, as Update does): the same levels, health counts, loads and, for
// every level the update touched, pickers that choose alike. A level the
// update left alone, or only reordered, keeps its pickers (Envoy
// refreshes only the priorities whose hosts changed).
func TestUpdateMatchesRebuild(t *testing.T) {
	for _, pol := range updatePolicies {
		for _, weightedHealth := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/weighted-health=%v", pol.name, weightedHealth), func(t *testing.T) {
				hc := &hostChurn{r: rand.New(rand.NewPCG(1, uint64(len(pol.name)))), weighted: pol.weights}
				config := func(seed uint64) Config {
					return Config{
						NewPicker:              pol.p.Pickers(Env{Rand: randSource(seed)}),
						HashBased:              pol.p.HashBased(),
						Rand:                   randSource(seed),
						PanicThreshold:         DefaultPanicThreshold,
						WeightedPriorityHealth: weightedHealth,
					}
				}
				levels := make([][]*upstream.Host, 3)
				for p := range levels {
					for range 4 + hc.r.IntN(6) {
						levels[p] = append(levels[p], hc.host(p))
					}
				}
				prev := New(levels, config(0))
				fast := 0
				for step := range 300 {
					next, ch := hc.update(levels)
					seed := uint64(step + 1)
					inc := prev.Update(next, ch, config(seed))
					full := prev.Update(next, nil, config(seed))
					fast += compareBalancers(t, step, prev, inc, full, ch)
					// Requests move the pickers on before the next update.
					for range hc.r.IntN(8) {
						inc.Pick(hashed(hc.r.Uint64()))
					}
					prev, levels = inc, next
				}
				if fast == 0 {
					t.Error("no update took a level's pickers over from the change: the comparison tested nothing of it")
				}
			})
		}
	}
}

// compareBalancers fails the test where inc, the balancer updated from
// prev by a change, differs from full, built again; it returns how many
// of inc's levels changed (and so were compared).
func compareBalancers(t *testing.T, step int, prev, inc, full *Balancer, ch *Change) int {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("update %d: "+format, append([]any{step}, args...)...)
	}
	ih, id, ip := inc.Loads()
	fh, fd, fp := full.Loads()
	if !slices.Equal(ih, fh) || !slices.Equal(id, fd) || !slices.Equal(ip, fp) {
		fail("loads %v %v %v, rebuilt %v %v %v", ih, id, ip, fh, fd, fp)
	}
	if !slices.Equal(inc.health, full.health) || !slices.Equal(inc.degraded, full.degraded) ||
		inc.only != full.only || inc.onlyDegr != full.onlyDegr || inc.onlyOne != full.onlyOne {
		fail("availability or sole source differ from the rebuilt balancer's")
	}
	if len(inc.levels) != len(full.levels) {
		fail("%d levels, rebuilt %d", len(inc.levels), len(full.levels))
	}
	touched := map[uint32]bool{}
	for _, h := range slices.Concat(ch.Added, ch.Removed) {
		touched[h.Priority] = true
	}
	changed := 0
	for i := range inc.levels {
		il, fl := &inc.levels[i], &full.levels[i]
		if ic, fc := il.state.counts(), fl.state.counts(); ic != fc {
			fail("level %d: counts %+v differ from the rebuilt %+v", i, ic, fc)
		}
		if !touched[uint32(i)] && i < len(prev.levels) {
			// Left alone (or only reordered, which Envoy ignores): the
			// same pickers go on, not built again.
			if was := &prev.levels[i]; il.all != was.all || il.healthy != was.healthy || il.degraded != was.degraded {
				fail("level %d: the update did not touch it, but its pickers were built again", i)
			}
			continue
		}
		changed++
		for _, src := range []struct {
			name      string
			inc, full Picker
		}{{"all", il.all, fl.all}, {"healthy", il.healthy, fl.healthy}, {"degraded", il.degraded, fl.degraded}} {
			if msg := samePicker(src.inc, src.full); msg != "" {
				fail("level %d, %s hosts: %s", i, src.name, msg)
			}
		}
	}
	return changed
}

// samePicker compares two pickers of the same host list, one from an
// update and one built anew: their state where it is plain (round robin,
// least request, random), else the hosts they pick for a run of hash keys
// (each is fresh, so their schedules start alike). "" when alike.
func samePicker(a, b Picker) string {
	if (a == nil) != (b == nil) {
		return fmt.Sprintf("picker %T, rebuilt %T", a, b)
	}
	if a == nil {
		return ""
	}
	if fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b) {
		return fmt.Sprintf("picker %T, rebuilt %T", a, b)
	}
	switch a := a.(type) {
	case *RoundRobin:
		b := b.(*RoundRobin)
		if a.edf == nil && (b.edf != nil || !slices.Equal(a.hosts, b.hosts) || a.next.Load() != b.next.Load()) {
			return fmt.Sprintf("round robin at %d, rebuilt at %d", a.next.Load(), b.next.Load())
		}
		if a.edf == nil {
			return ""
		}
	case *leastRequest:
		b := b.(*leastRequest)
		if !slices.Equal(a.hosts, b.hosts) || a.choices != b.choices || a.fullScan != b.fullScan || a.slow != b.slow {
			return "least request differs"
		}
		return ""
	case *random:
		if !slices.Equal(a.hosts, b.(*random).hosts) {
			return "random's hosts differ"
		}
		return ""
	}
	for k := range 64 {
		key := hashed(uint64(k) * 0x9e3779b97f4a7c15)
		if ha, hb := a.Pick(key), b.Pick(key); ha != hb {
			return fmt.Sprintf("pick %d: %s, rebuilt %s", k, ha.Address, hb.Address)
		}
	}
	return ""
}

// TestUpdateCarriesOn checks Envoy's semantics across an update: round
// robin goes on from its place in the cycle (Envoy keeps each host list's
// index), a level the update left alone keeps its pickers (its ring hash
// table is not built again), and a least request pick still reads the
// active requests of a host kept through the update.
func TestUpdateCarriesOn(t *testing.T) {
	hosts := ports("1", "2", "3", "4")
	cfg := Config{Rand: seq(), PanicThreshold: DefaultPanicThreshold}
	b := New([][]*upstream.Host{hosts}, cfg)
	for _, want := range []string{"1", "2", "3"} {
		if h, _ := b.Pick(nil); h.Address != "127.0.0.1:"+want {
			t.Fatalf("picked %s, want %s", h.Address, want)
		}
	}
	added := ports("5")[0]
	next := append(slices.Clone(hosts), added)
	b = b.Update([][]*upstream.Host{next}, &Change{Added: []*upstream.Host{added}}, Config{Rand: seq(), PanicThreshold: DefaultPanicThreshold})
	for _, want := range []string{"4", "5", "1"} {
		if h, _ := b.Pick(nil); h.Address != "127.0.0.1:"+want {
			t.Fatalf("after the update picked %s, want %s: round robin went back to its start", h.Address, want)
		}
	}

	// A ring hash cluster of two levels; an update of level 1 only.
	ring := ringHashPolicy{minSize: 256, maxSize: 1024}
	rcfg := func() Config {
		return Config{NewPicker: ring.Pickers(Env{Rand: seq()}), HashBased: true, Rand: seq(), PanicThreshold: DefaultPanicThreshold}
	}
	l0, l1 := ports("1", "2"), ports("3")
	for _, h := range l1 {
		h.Priority = 1
	}
	rb := New([][]*upstream.Host{l0, l1}, rcfg())
	extra := ports("4")[0]
	extra.Priority = 1
	nb := rb.Update([][]*upstream.Host{slices.Clone(l0), append(slices.Clone(l1), extra)}, &Change{Added: []*upstream.Host{extra}}, rcfg())
	if nb.levels[0].healthy != rb.levels[0].healthy {
		t.Error("the ring of a level the update left alone was built again")
	}
	if nb.levels[1].healthy == rb.levels[1].healthy {
		t.Error("the ring of the level the update changed was kept")
	}

	// Least request with a full scan: the busy kept host is passed over.
	lr := leastRequestPolicy{choices: defaultChoiceCount, fullScan: true, bias: runtimeDouble{def: 1}}
	lcfg := func() Config {
		return Config{NewPicker: lr.Pickers(Env{Rand: seq()}), Rand: seq(), PanicThreshold: DefaultPanicThreshold}
	}
	busy, idle := ports("1", "2")[0], ports("2")[0]
	busy.Stats.RqActive.Store(5)
	lb := New([][]*upstream.Host{{busy}}, lcfg())
	lb = lb.Update([][]*upstream.Host{{busy, idle}}, &Change{Added: []*upstream.Host{idle}}, lcfg())
	if h, _ := lb.Pick(nil); h != idle {
		t.Errorf("least request picked %s with 5 requests over the idle new host", h.Address)
	}
}
