package lb

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// testRing is the ring of hosts weighed by their load_balancing_weight.
func testRing(hosts []*upstream.Host, minSize, maxSize uint64, murmur, useHostname bool) *Ring {
	w, sum := hostWeights(hosts)
	return newRing(hosts, w, sum, minSize, maxSize, murmur, useHostname)
}

// testMaglev is the table of hosts weighed by their load_balancing_weight.
func testMaglev(hosts []*upstream.Host, size uint64, useHostname bool) *Maglev {
	w, sum := hostWeights(hosts)
	return newMaglev(hosts, w, sum, size, useHostname)
}

// localityHosts are n hosts of weight 1 in zone z of locality weight lw.
func localityHosts(z string, lw uint32, first, n int) []*upstream.Host {
	var out []*upstream.Host
	for i := range n {
		out = append(out, &upstream.Host{Address: "127.0.0." + string(rune('1'+first+i)) + ":80", Weight: 1,
			Locality: upstream.Locality{Zone: z}, LocalityWeight: lw})
	}
	return out
}

// TestHashLocalityWeights: with locality_weighted_lb_config a ring hash
// or maglev policy gives each locality the share of the hashes its
// load_balancing_weight asks, whatever its number of hosts, as Envoy's
// normalizeLocalityWeights; a locality of weight 0 gets none.
func TestHashLocalityWeights(t *testing.T) {
	// Zone a: one host, weight 3; zone b: three hosts, weight 1; zone
	// c: weight 0.
	hosts := append(append(localityHosts("a", 3, 0, 1), localityHosts("b", 1, 1, 3)...), localityHosts("c", 0, 4, 2)...)
	kept, w := localityWeights(hosts)
	if len(kept) != 4 {
		t.Fatalf("%d hosts kept, want 4 (zone c has weight 0)", len(kept))
	}
	if w[0] != 0.75 || w[1] != 0.25/3 {
		t.Errorf("normalized weights %v, want 0.75 then 1/12 each", w)
	}
	for name, pol := range map[string]Policy{
		"ring hash": WithLocalityWeights(ringHashPolicy{minSize: DefaultMinRingSize, maxSize: DefaultMaxRingSize}),
		"maglev":    WithLocalityWeights(maglevPolicy{tableSize: DefaultMaglevTableSize}),
	} {
		if !FoldsLocalityWeights(pol) {
			t.Fatalf("%s: not locality-weighted", name)
		}
		type table interface{ at(uint64) *upstream.Host }
		p := pol.Pickers(Env{})(hosts, 0)
		var tb table
		switch x := p.(type) {
		case *Ring:
			tb = x
		case *Maglev:
			tb = x
		default:
			t.Fatalf("%s: picker %T", name, p)
		}
		byZone := map[string]int{}
		const keys = 20000
		for k := range uint64(keys) {
			byZone[tb.at(k*0x9e3779b97f4a7c15).Locality.Zone]++
		}
		if a := byZone["a"]; a < keys*70/100 || a > keys*80/100 || byZone["c"] != 0 {
			t.Errorf("%s: hashes by zone %v, want about 75%% in a, none in c", name, byZone)
		}
	}
	if p := WithLocalityWeights(ringHashPolicy{minSize: 16, maxSize: 1024}).Pickers(Env{})(localityHosts("c", 0, 0, 2), 0); p != nil {
		t.Error("every locality of weight 0: a picker")
	}
}
