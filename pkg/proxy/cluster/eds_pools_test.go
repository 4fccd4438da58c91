package cluster

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestEDSUpdateChangesPoolsInPlace: an EDS update of a set large enough
// for a pool map keeps the pools of the hosts it keeps, gives the new host
// a pool, and retires the pool of the host it removed, whether the
// update's knowledge of the replaced set applies (changed in place) or the
// set changed meanwhile (rebuilt).
func TestEDSUpdateChangesPoolsInPlace(t *testing.T) {
	for _, meanwhile := range []bool{false, true} {
		m, _, _ := newTestManager(t, `
- name: backend
  type: EDS`)
		c := m.Cluster("backend")
		p, err := c.EDSHosts(claOf(portsFrom(9000, 20)...))
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(p)
		before := map[string]*http1Pool{}
		hosts := map[string]*upstream.Host{}
		for _, h := range c.Hosts() {
			before[h.Address], hosts[h.Address] = c.set.Load().pool(h), h
		}
		// 9005 removed, 9100 added.
		ports := append(append(portsFrom(9000, 5), portsFrom(9006, 14)...), 9100)
		p, err = c.EDSHosts(claOf(ports...))
		if err != nil {
			t.Fatal(err)
		}
		if meanwhile {
			// Another set installed between the update's build and
			// its installation: the same hosts, a new set.
			c.SetHosts([][]*upstream.Host{c.Hosts()})
		}
		c.SetEDSHosts(p)
		hs := c.set.Load()
		n := 0
		for range hs.h1.all() {
			n++
		}
		if n != len(hs.hosts) || len(hs.hosts) != 20 {
			t.Fatalf("meanwhile %v: %d pools for %d hosts, want 20 of each", meanwhile, n, len(hs.hosts))
		}
		for _, h := range hs.hosts {
			pool := hs.pool(h)
			switch {
			case pool == nil:
				t.Fatalf("meanwhile %v: %s has no pool", meanwhile, h.Address)
			case h.Address == "127.0.0.1:9100":
				if isRetired(pool) {
					t.Errorf("meanwhile %v: the new host's pool is retired", meanwhile)
				}
			case pool != before[h.Address] || h != hosts[h.Address]:
				t.Errorf("meanwhile %v: %s lost its host or pool", meanwhile, h.Address)
			}
		}
		if gone := before["127.0.0.1:9005"]; !isRetired(gone) {
			t.Errorf("meanwhile %v: the removed host's pool is not retired", meanwhile)
		}
		for addr, pool := range before {
			if addr != "127.0.0.1:9005" && isRetired(pool) {
				t.Errorf("meanwhile %v: the pool of %s, kept, is retired", meanwhile, addr)
			}
		}
	}
}

// TestHTTP1PoolsChangedKeepsStayingHosts: the change's added hosts get
// pools, its departed ones lose theirs, except a host the change lists as
// gone that the new set has all the same (kept while healthy), which
// keeps its pool; the previous map is left as it was.
func TestHTTP1PoolsChangedKeepsStayingHosts(t *testing.T) {
	var hosts []*upstream.Host
	ps := newHTTP1Pools(12)
	for range 12 {
		h := &upstream.Host{}
		hosts = append(hosts, h)
		ps.put(h, &http1Pool{})
	}
	added := &upstream.Host{}
	ch := &setChange{gone: []*upstream.Host{hosts[0], hosts[5]}, added: []*upstream.Host{added}}

	// hosts[5] stays (extra).
	next := append(append([]*upstream.Host{}, hosts[1:]...), added)
	got, retired := ps.changed(next, ch, true)
	if len(retired) != 1 || retired[0] != ps.get(hosts[0]) {
		t.Fatalf("retired %v, want host 0's pool alone", retired)
	}
	if got.get(hosts[0]) != nil || got.get(added) == nil || got.get(hosts[5]) != ps.get(hosts[5]) || poolCount(got) != 12 {
		t.Fatalf("pools after the change: host 0 %v, added %v, host 5 kept %v, %d in all",
			got.get(hosts[0]), got.get(added), got.get(hosts[5]) == ps.get(hosts[5]), poolCount(got))
	}

	// Both go.
	next = append(append(append([]*upstream.Host{}, hosts[1:5]...), hosts[6:]...), added)
	got, retired = ps.changed(next, ch, false)
	if len(retired) != 2 || got.get(hosts[5]) != nil || got.get(hosts[0]) != nil || poolCount(got) != 11 {
		t.Fatalf("both gone: %d retired, %d pools", len(retired), poolCount(got))
	}
	if poolCount(ps) != 12 || ps.get(hosts[0]) == nil || ps.get(added) != nil {
		t.Fatal("the previous set's pools changed")
	}
}

// poolCount is the number of pools all yields.
func poolCount(ps http1Pools) int {
	n := 0
	for range ps.all() {
		n++
	}
	return n
}

// TestHTTP1PoolsChangesMatchAModel applies 400 random changes one after
// another (hosts added, hosts gone, some of the gone staying), each to the
// set the previous one made, and compares every set with a plain map kept
// beside it: its pools by get and by all, the pools retired, and the
// earlier sets left as they were (a set's map is shared by the sets
// changed from it).
func TestHTTP1PoolsChangesMatchAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ps := newHTTP1Pools(200)
	model := map[*upstream.Host]*http1Pool{}
	var hosts []*upstream.Host
	for range 200 {
		h := &upstream.Host{}
		p := &http1Pool{}
		ps.put(h, p)
		model[h] = p
		hosts = append(hosts, h)
	}
	type past struct {
		set   http1Pools
		model map[*upstream.Host]*http1Pool
	}
	var history []past
	folded := 0
	for step := range 400 {
		ch := &setChange{}
		for range rng.IntN(6) {
			ch.added = append(ch.added, &upstream.Host{})
		}
		var next []*upstream.Host
		stays := map[*upstream.Host]bool{}
		for _, h := range hosts {
			if rng.IntN(100) < 2 {
				ch.gone = append(ch.gone, h)
				if rng.IntN(4) == 0 {
					stays[h] = true
					next = append(next, h)
				}
				continue
			}
			next = append(next, h)
		}
		next = append(next, ch.added...)
		got, retired := ps.changed(next, ch, len(stays) > 0)
		if got.delta == nil {
			folded++
		}
		want := maps.Clone(model)
		var wantRetired []*http1Pool
		for _, h := range ch.gone {
			if !stays[h] {
				wantRetired = append(wantRetired, want[h])
				delete(want, h)
			}
		}
		for _, h := range ch.added {
			if got.get(h) == nil {
				t.Fatalf("step %d: an added host has no pool", step)
			}
			want[h] = got.get(h)
		}
		if !slices.Equal(retired, wantRetired) {
			t.Fatalf("step %d: retired %d pools, want %d", step, len(retired), len(wantRetired))
		}
		all := maps.Collect(got.all())
		if !maps.Equal(all, want) {
			t.Fatalf("step %d: all yields %d pools, want %d", step, len(all), len(want))
		}
		for _, h := range append(slices.Clone(hosts), ch.added...) {
			if got.get(h) != want[h] {
				t.Fatalf("step %d: get gives another pool than the model", step)
			}
		}
		history = append(history, past{ps, model})
		ps, model, hosts = got, want, next
	}
	for i, p := range history {
		if !maps.Equal(maps.Collect(p.set.all()), p.model) {
			t.Fatalf("the set before step %d changed", i)
		}
	}
	if folded == 0 || folded == 400 {
		t.Fatalf("%d of 400 changes folded the delta: the test exercises one path only", folded)
	}
}

// isRetired reports whether p was retired.
func isRetired(p *http1Pool) bool {
	return p.retired.Load()
}

// TestEDSUpdateKeepsPoolOfHostKeptWhileHealthy: a host an update removes
// that stays while healthy (active health checking) keeps its pool
// through the in-place change of the pool map.
func TestEDSUpdateKeepsPoolOfHostKeptWhileHealthy(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS
  health_checks: [{timeout: 1s, interval: 60s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
	c := m.Cluster("backend")
	p, err := c.EDSHosts(claOf(portsFrom(9000, 20)...))
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(p)
	before := map[string]*http1Pool{}
	for _, h := range c.Hosts() {
		// As if its first check had passed (the manager is not started).
		h.ClearHealthFlag(upstream.FailedActiveHC)
		h.ClearHealthFlag(upstream.PendingActiveHC)
		before[h.Address] = c.set.Load().pool(h)
	}
	// 9005 removed, 9100 added.
	p, err = c.EDSHosts(claOf(append(append(portsFrom(9000, 5), portsFrom(9006, 14)...), 9100)...))
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(p)
	hs := c.set.Load()
	if len(hs.hosts) != 21 {
		t.Fatalf("%d hosts, want 21 (the removed one kept while healthy)", len(hs.hosts))
	}
	for _, h := range hs.hosts {
		pool := hs.pool(h)
		if pool == nil || isRetired(pool) {
			t.Fatalf("%s: pool %v, retired", h.Address, pool)
		}
		if h.Address != "127.0.0.1:9100" && pool != before[h.Address] {
			t.Errorf("%s lost its pool", h.Address)
		}
	}
}
