package lb

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// seq returns a Rand yielding vals in turn, then zeros.
func seq(vals ...uint64) func() uint64 {
	return func() uint64 {
		if len(vals) == 0 {
			return 0
		}
		v := vals[0]
		vals = vals[1:]
		return v
	}
}

// ports are hosts 127.0.0.1:<port>, weight 1 unless given as port:weight.
func ports(specs ...string) []*upstream.Host {
	hosts := makeHosts(specs...)
	for _, h := range hosts {
		h.Address = "127.0.0.1:" + h.Address
	}
	return hosts
}

// hashed is a pick context with a hash key.
func hashed(h uint64) *upstream.PickContext {
	return &upstream.PickContext{Hash: h, HasHash: true}
}

// pickers builds the factory of a compiled policy with a test Env.
func pickers(t *testing.T, p Policy, env Env) PickerFactory {
	t.Helper()
	if env.Rand == nil {
		env.Rand = seq()
	}
	return p.Pickers(env)
}

func TestHashFunctions(t *testing.T) {
	// Envoy's test/common/common/hash_test.cc.
	for in, want := range map[string]uint64{
		"foo": 9631199822919835226, "bar": 11474628671133349555, "foo\nbar": 16306510975912980159,
		"lyft": 12847078931730529320, "": 6142509188972423790,
	} {
		if got := murmur2(in, murmurSeed); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]uint64{"foo": 3728699739546630719, "lyft": 4400747396090729504, "": 17241709254077376921} {
		if got := xxhash.Sum64String(in); got != want {
			t.Errorf("xxHash64(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestRingEnvoyVectors checks rings against Envoy's ring_hash_lb_test.cc:
// the same hosts give the same points, so keys go where Envoy sends them.
func TestRingEnvoyVectors(t *testing.T) {
	tests := map[string]struct {
		murmur, hostname bool
		hosts            []*upstream.Host
		keys             map[uint64]int // key -> index of the host
	}{
		"xx hash": {
			hosts: ports("90", "91", "92", "93", "94", "95"),
			keys:  map[uint64]int{0: 4, math.MaxUint64: 4, 3551244743356806947: 5, 3551244743356806948: 3, 16117243373044804880: 0},
		},
		"murmur hash 2": {
			murmur: true,
			hosts:  ports("80", "81", "82", "83", "84", "85"),
			keys:   map[uint64]int{0: 5, math.MaxUint64: 5, 1358027074129602068: 5, 1358027074129602069: 3, 10150910876324007730: 2},
		},
		"hostnames": {
			hostname: true,
			hosts: func() []*upstream.Host {
				hosts := ports("90", "91", "92", "93", "94", "95")
				for i, h := range hosts {
					h.Hostname = fmt.Sprint(90 + i)
				}
				return hosts
			}(),
			keys: map[uint64]int{0: 5, math.MaxUint64: 5, 7225015537174310577: 2, 6803900775736438537: 3},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := testRing(tc.hosts, 12, DefaultMaxRingSize, tc.murmur, tc.hostname)
			if len(r.hashes) != 12 || r.minHashes != 2 || r.maxHashes != 2 {
				t.Errorf("ring size %d, hashes per host %d..%d, want 12, 2..2", len(r.hashes), r.minHashes, r.maxHashes)
			}
			for key, want := range tc.keys {
				if got := r.Pick(hashed(key)); got != tc.hosts[want] {
					t.Errorf("key %d went to %s, want %s", key, got.Address, tc.hosts[want].Address)
				}
			}
		})
	}
}

// TestMaglevEnvoyVectors checks tables against Envoy's maglev_lb_test.cc.
func TestMaglevEnvoyVectors(t *testing.T) {
	tests := map[string]struct {
		hosts    []*upstream.Host
		size     uint64
		want     []int
		min, max uint64
	}{
		"basic": {
			hosts: ports("90", "91", "92", "93", "94", "95"), size: 7,
			want: []int{2, 4, 0, 1, 5, 0, 3}, min: 1, max: 2,
		},
		"weighted": {
			hosts: ports("90:1", "91:2"), size: 17,
			want: []int{1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1}, min: 6, max: 11,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := testMaglev(tc.hosts, tc.size, false)
			if m.minEntries != tc.min || m.maxEntries != tc.max {
				t.Errorf("entries per host %d..%d, want %d..%d", m.minEntries, m.maxEntries, tc.min, tc.max)
			}
			for i := range uint64(3 * len(tc.want)) {
				if got, want := m.Pick(hashed(i)), tc.hosts[tc.want[i%uint64(len(tc.want))]]; got != want {
					t.Errorf("key %d went to %s, want %s", i, got.Address, want.Address)
				}
			}
		})
	}
}

// TestConsistentHashingMovesFewKeys removes and adds one host of 100: only
// about 1/100 of the keys may move, and the keys of the hosts that stay
// stay (all of them with a ring, nearly all with maglev).
func TestConsistentHashingMovesFewKeys(t *testing.T) {
	var specs []string
	for i := range 100 {
		specs = append(specs, fmt.Sprint(10000+i))
	}
	const keys = 20000
	builders := map[string]struct {
		build func(hosts []*upstream.Host) hashTable
		// strays is how many keys of the hosts that stay may move: none
		// on a ring; maglev aims at minimal disruption, not none.
		strays int
	}{
		"ring hash": {build: func(hosts []*upstream.Host) hashTable {
			return testRing(hosts, DefaultMinRingSize, DefaultMaxRingSize, false, false)
		}},
		"maglev": {build: func(hosts []*upstream.Host) hashTable { return testMaglev(hosts, DefaultMaglevTableSize, false) }, strays: keys / 100},
	}
	for name, b := range builders {
		build := b.build
		t.Run(name, func(t *testing.T) {
			hosts := ports(specs...)
			before := build(hosts)
			removed := hosts[37]
			after := build(append(append([]*upstream.Host(nil), hosts[:37]...), hosts[38:]...))
			var moved, strayed int
			for k := range uint64(keys) {
				key := xxhash.Sum64String(fmt.Sprint(k))
				b, a := before.at(key), after.at(key)
				if b != a {
					moved++
					if b != removed {
						strayed++
					}
				}
			}
			// The removed host had about 1/100 of the keys.
			if moved > keys*2/100 {
				t.Errorf("removing 1 host of 100 moved %d of %d keys, want about %d", moved, keys, keys/100)
			}
			if strayed > b.strays {
				t.Errorf("%d keys of hosts that stayed moved", strayed)
			}
			added := ports("20000")[0]
			grown := build(append(append([]*upstream.Host(nil), hosts...), added))
			moved = 0
			for k := range uint64(keys) {
				key := xxhash.Sum64String(fmt.Sprint(k))
				if before.at(key) != grown.at(key) {
					moved++
				}
			}
			if moved > keys*2/100 {
				t.Errorf("adding a 101st host moved %d of %d keys, want about %d", moved, keys, keys/101)
			}
		})
	}
}

// TestHashedShares checks that random keys spread over hosts in
// proportion to their weights.
func TestHashedShares(t *testing.T) {
	hosts := ports("1:1", "2:2", "3:3", "4:4")
	tables := map[string]hashTable{
		"ring hash": testRing(hosts, DefaultMinRingSize, DefaultMaxRingSize, false, false),
		"maglev":    testMaglev(hosts, DefaultMaglevTableSize, false),
	}
	for name, table := range tables {
		t.Run(name, func(t *testing.T) {
			const n = 100000
			got := map[string]int{}
			for k := range uint64(n) {
				got[table.at(xxhash.Sum64String(fmt.Sprint(k))).Address]++
			}
			for i, h := range hosts {
				want := float64(n) * float64(i+1) / 10
				if share := float64(got[h.Address]); math.Abs(share-want) > want*0.15 {
					t.Errorf("%s got %v keys, want about %v", h.Address, share, want)
				}
			}
		})
	}
}

// TestHashedWithoutHash checks that a pick without a hash key goes to a
// random host, as Envoy's ring hash and maglev do.
func TestHashedWithoutHash(t *testing.T) {
	hosts := ports("1", "2", "3")
	var draws []uint64
	for i := range 300 {
		draws = append(draws, xxhash.Sum64String(fmt.Sprint(i)))
	}
	for name, p := range map[string]Policy{
		"ring hash": ringHashPolicy{minSize: DefaultMinRingSize, maxSize: DefaultMaxRingSize},
		"maglev":    maglevPolicy{tableSize: DefaultMaglevTableSize},
	} {
		t.Run(name, func(t *testing.T) {
			pk := pickers(t, p, Env{Rand: seq(draws...)})(hosts, 0)
			got := map[string]int{}
			for range 300 {
				got[pk.Pick(nil).Address]++
			}
			for _, h := range hosts {
				if got[h.Address] < 60 {
					t.Errorf("random picks: %v", got)
				}
			}
		})
	}
}

func TestHashedStats(t *testing.T) {
	store := stats.NewStore()
	scope := store.Scope("cluster.c.")
	hosts := ports("90", "91", "92", "93", "94", "95")
	ring := pickers(t, ringHashPolicy{minSize: 12, maxSize: DefaultMaxRingSize}, Env{Stats: &scope})
	ring(hosts, 0)
	// A level's degraded hosts get their own ring, which the gauges do
	// not describe.
	degraded := makeHosts("d~")
	ring(degraded, 0)
	maglev := pickers(t, maglevPolicy{tableSize: 7}, Env{Stats: &scope})
	maglev(hosts, 0)
	got := map[string]int64{}
	for _, name := range []string{"ring_hash_lb.size", "ring_hash_lb.min_hashes_per_host", "ring_hash_lb.max_hashes_per_host",
		"maglev_lb.min_entries_per_host", "maglev_lb.max_entries_per_host"} {
		got[name] = scope.Gauge(name).Value()
	}
	want := map[string]int64{"ring_hash_lb.size": 12, "ring_hash_lb.min_hashes_per_host": 2, "ring_hash_lb.max_hashes_per_host": 2,
		"maglev_lb.min_entries_per_host": 1, "maglev_lb.max_entries_per_host": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gauges (-want +got):\n%s", diff)
	}
}

func TestHashKeys(t *testing.T) {
	h := ports("90")[0]
	h.Hostname = "web-0"
	if got := hashKey(h, false); got != "127.0.0.1:90" {
		t.Errorf("address key = %q", got)
	}
	if got := hashKey(h, true); got != "web-0" {
		t.Errorf("hostname key = %q", got)
	}
	h.Hostname = ""
	if got := hashKey(h, true); got != "127.0.0.1:90" {
		t.Errorf("hostname key without a hostname = %q", got)
	}
	h.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		"envoy.lb": {Fields: map[string]*structpb.Value{"hash_key": structpb.NewStringValue("custom")}},
	}}
	if got := hashKey(h, true); got != "custom" {
		t.Errorf("metadata key = %q", got)
	}
}

func TestLeastRequest(t *testing.T) {
	hosts := ports("1", "2", "3")
	hosts[1].Stats.RqActive.Store(10)
	hosts[2].Stats.RqActive.Store(1)
	t.Run("two choices take the less busy host", func(t *testing.T) {
		p := &leastRequest{hosts: hosts, choices: 2}
		for _, tc := range []struct {
			draws []uint64
			want  int
		}{
			{[]uint64{1, 0}, 0}, {[]uint64{1, 2}, 2}, {[]uint64{2, 0}, 0}, {[]uint64{1, 1}, 1}, {[]uint64{0, 2}, 0},
		} {
			p.rand = seq(tc.draws...)
			if got := p.Pick(nil); got != hosts[tc.want] {
				t.Errorf("samples %v chose %s, want %s", tc.draws, got.Address, hosts[tc.want].Address)
			}
		}
	})
	t.Run("the busiest host gets only picks where it is every sample", func(t *testing.T) {
		pk := pickers(t, leastRequestPolicy{choices: 2, bias: runtimeDouble{def: 1}}, Env{Rand: randSource(1)})(hosts, 0)
		got := map[string]int{}
		for range 9000 {
			got[pk.Pick(nil).Address]++
		}
		// 1/9 of the pairs are (busy, busy).
		if b := got[hosts[1].Address]; b < 800 || b > 1200 {
			t.Errorf("the busy host got %d of 9000 picks, want about 1000: %v", b, got)
		}
	})
	t.Run("full scan splits ties evenly", func(t *testing.T) {
		tied := ports("1", "2", "3")
		tied[1].Stats.RqActive.Store(5)
		pk := pickers(t, leastRequestPolicy{choices: 2, fullScan: true}, Env{Rand: randSource(2)})(tied, 0)
		got := map[string]int{}
		for range 2000 {
			got[pk.Pick(nil).Address]++
		}
		if got[tied[1].Address] != 0 || got[tied[0].Address] < 800 || got[tied[2].Address] < 800 {
			t.Errorf("full scan: %v", got)
		}
	})
}

// randSource is a deterministic random source for distribution tests.
func randSource(seed uint64) func() uint64 {
	s := seed
	return func() uint64 {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
}

// TestWeightedLeastRequest checks the schedule's effective weights:
// weight / (active + 1)^bias.
func TestWeightedLeastRequest(t *testing.T) {
	tests := map[string]struct {
		hosts  string // weight and active requests per host: "w/a"
		bias   runtimeDouble
		rt     mapRuntime
		n      int
		shares []int
	}{
		"idle hosts share by weight":           {hosts: "1/0 2/0", bias: runtimeDouble{def: 1}, n: 300, shares: []int{100, 200}},
		"active requests lower a weight":       {hosts: "1/0 2/3", bias: runtimeDouble{def: 1}, n: 300, shares: []int{200, 100}},
		"bias 0 ignores active requests":       {hosts: "1/0 2/3", bias: runtimeDouble{def: 0}, n: 300, shares: []int{100, 200}},
		"bias 2 squares them":                  {hosts: "1/0 4/1", bias: runtimeDouble{def: 2}, n: 200, shares: []int{100, 100}},
		"the runtime key overrides the bias":   {hosts: "1/0 2/3", bias: runtimeDouble{key: "lr.bias", def: 1}, rt: mapRuntime{"lr.bias": "0"}, n: 300, shares: []int{100, 200}},
		"a bad runtime value counts as bias 1": {hosts: "1/0 2/3", bias: runtimeDouble{key: "lr.bias", def: 0}, rt: mapRuntime{"lr.bias": "-1"}, n: 300, shares: []int{200, 100}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var hosts []*upstream.Host
			for i, f := range strings.Fields(tc.hosts) {
				var w uint32
				var a int64
				fmt.Sscanf(f, "%d/%d", &w, &a)
				h := &upstream.Host{Address: fmt.Sprint(i), Weight: w}
				h.Stats.RqActive.Store(a)
				hosts = append(hosts, h)
			}
			env := Env{}
			if tc.rt != nil {
				env.Runtime = tc.rt
			}
			pk := pickers(t, leastRequestPolicy{choices: 2, bias: tc.bias}, env)(hosts, 0)
			got := make([]int, len(hosts))
			for range tc.n {
				h := pk.Pick(nil)
				got[h.Address[0]-'0']++
			}
			for i := range got {
				if d := got[i] - tc.shares[i]; d < -2 || d > 2 {
					t.Errorf("shares %v, want %v", got, tc.shares)
					break
				}
			}
		})
	}
}

// mapRuntime is a Runtime of fixed values.
type mapRuntime map[string]string

func (m mapRuntime) Get(key string) (string, bool) { v, ok := m[key]; return v, ok }

func TestRandom(t *testing.T) {
	// Weights do not matter to the random balancer.
	hosts := ports("1:1", "2:50", "3:1", "4:1")
	pk := pickers(t, randomPolicy{}, Env{Rand: randSource(3)})(hosts, 0)
	got := map[string]int{}
	for range 8000 {
		got[pk.Pick(nil).Address]++
	}
	for _, h := range hosts {
		if n := got[h.Address]; n < 1700 || n > 2300 {
			t.Errorf("random picks %v, want about 2000 each", got)
			break
		}
	}
}

// TestSlowStart ramps a new host's weight up over its window: its share
// of the picks follows (time in window / window)^(1/aggression), never
// below min_weight_percent, and is its own once the window has passed.
func TestSlowStart(t *testing.T) {
	first := time.Unix(1000, 0)
	added := first.Add(time.Minute)
	ss := &slowStart{window: 10 * time.Second, aggression: runtimeDouble{def: 1}, minWeight: 0.1}
	tests := map[string]struct {
		at         time.Duration // after the new host was added
		aggression float64
		newShare   float64 // of the new host, among 2 of weight 1
	}{
		"at once: the minimum weight":       {at: 0, newShare: 0.1 / 1.1},
		"halfway":                           {at: 5 * time.Second, newShare: 0.5 / 1.5},
		"halfway with aggression 2":         {at: 5 * time.Second, aggression: 2, newShare: math.Sqrt(0.5) / (1 + math.Sqrt(0.5))},
		"past the window: its own weight":   {at: 11 * time.Second, newShare: 0.5},
		"early, under the minimum: clamped": {at: 500 * time.Millisecond, newShare: 0.1 / 1.1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := &upstream.Host{Address: "old", Weight: 1, Created: first}
			fresh := &upstream.Host{Address: "new", Weight: 1, Created: added}
			now := added.Add(tc.at)
			s := *ss
			if tc.aggression != 0 {
				s.aggression = runtimeDouble{def: tc.aggression}
			}
			env := Env{Now: now, Clock: func() time.Time { return now }, FirstSet: first, Rand: randSource(5)}
			for pname, p := range map[string]Policy{
				"round robin":   roundRobinPolicy{slowStart: &s},
				"least request": leastRequestPolicy{choices: 2, bias: runtimeDouble{def: 1}, slowStart: &s},
			} {
				pk := pickers(t, p, env)([]*upstream.Host{old, fresh}, 0)
				const n = 10000
				var got int
				for range n {
					if pk.Pick(nil) == fresh {
						got++
					}
				}
				if share := float64(got) / n; math.Abs(share-tc.newShare) > 0.01 {
					t.Errorf("%s: the new host got %.3f of the picks, want %.3f", pname, share, tc.newShare)
				}
			}
		})
	}
	t.Run("hosts of the first set are not new", func(t *testing.T) {
		a := &upstream.Host{Address: "a", Weight: 1, Created: first}
		if r := ss.at(&Env{Now: first, FirstSet: first}, []*upstream.Host{a}); r != nil {
			t.Errorf("a host of the first set is in slow start")
		}
	})
}

// TestHashChoosesPriority checks that a key keeps its priority level as
// well as its host: Envoy's ring hash and maglev choose the level with
// the key.
func TestHashChoosesPriority(t *testing.T) {
	// P0 has one of two hosts healthy (70%), P1 takes the rest.
	priorities := [][]*upstream.Host{ports("1", "2!"), ports("3", "4")}
	b := New(priorities, Config{NewPicker: pickers(t, maglevPolicy{tableSize: 7}, Env{}), HashBased: true, Rand: randSource(4)})
	for k := range uint64(200) {
		key := xxhash.Sum64String(fmt.Sprint(k))
		first, _ := b.Pick(hashed(key))
		for range 3 {
			if h, _ := b.Pick(hashed(key)); h != first {
				t.Fatalf("key %d went to %s, then %s", key, first.Address, h.Address)
			}
		}
		wantP0 := key%100+1 <= 70
		if (first.Address == "127.0.0.1:1") != wantP0 {
			t.Errorf("key %d (point %d) went to %s", key, key%100+1, first.Address)
		}
	}
}

func TestPickersDoNotAllocate(t *testing.T) {
	hosts := ports("1", "2", "3:2")
	policies := map[string]Policy{
		"least request":          leastRequestPolicy{choices: 2, bias: runtimeDouble{def: 1}},
		"least request weighted": leastRequestPolicy{choices: 2, bias: runtimeDouble{def: 0.5}},
		"random":                 randomPolicy{},
		"ring hash":              ringHashPolicy{minSize: DefaultMinRingSize, maxSize: DefaultMaxRingSize},
		"maglev":                 maglevPolicy{tableSize: DefaultMaglevTableSize},
	}
	for name, p := range policies {
		t.Run(name, func(t *testing.T) {
			b := New([][]*upstream.Host{hosts[:2], hosts}, Config{NewPicker: p.Pickers(Env{}), HashBased: p.HashBased(), PanicThreshold: DefaultPanicThreshold})
			pc := hashed(42)
			if allocs := testing.AllocsPerRun(100, func() { b.Pick(pc) }); allocs != 0 {
				t.Errorf("Pick allocates %v times per call", allocs)
			}
		})
	}
}
