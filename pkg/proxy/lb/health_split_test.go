package lb

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestSplitHealth: a level's healthy and degraded hosts, in order, for
// every place of an unhealthy and a degraded host; a level of healthy
// hosts alone is its own healthy list (no copy).
func TestSplitHealth(t *testing.T) {
	healthy := func() *upstream.Host { return &upstream.Host{} }
	all := []*upstream.Host{healthy(), healthy(), healthy(), healthy()}
	if h, d, _ := splitHealth(all, false); &h[0] != &all[0] || len(h) != 4 || d != nil {
		t.Fatalf("all healthy: %d healthy (shared %v), %d degraded", len(h), &h[0] == &all[0], len(d))
	}
	if h, d, _ := splitHealth(nil, false); h != nil || d != nil {
		t.Fatal("no hosts: lists")
	}
	for bad := range 4 {
		for degr := range 4 {
			if bad == degr {
				continue
			}
			hosts := []*upstream.Host{healthy(), healthy(), healthy(), healthy()}
			hosts[bad].ConfigHealth = corev3.HealthStatus_UNHEALTHY
			hosts[degr].ConfigHealth = corev3.HealthStatus_DEGRADED
			var want []*upstream.Host
			for i, h := range hosts {
				if i != bad && i != degr {
					want = append(want, h)
				}
			}
			h, d, _ := splitHealth(hosts, false)
			if !slices.Equal(h, want) || len(d) != 1 || d[0] != hosts[degr] {
				t.Errorf("unhealthy %d, degraded %d: healthy %v, degraded %v", bad, degr, h, d)
			}
			if &h[0] == &hosts[0] {
				t.Errorf("unhealthy %d, degraded %d: the healthy list shares the level", bad, degr)
			}
		}
	}
	one := []*upstream.Host{healthy()}
	one[0].ConfigHealth = corev3.HealthStatus_UNHEALTHY
	if h, d, _ := splitHealth(one, false); h != nil || d != nil {
		t.Errorf("one unhealthy host: healthy %v, degraded %v", h, d)
	}
}

// TestSplitHealthExcluded: a host waiting for its first health check
// (ignore_new_hosts_until_first_hc) or excluded by an immediate health
// check failure leaves the level's total, its weight too, as Envoy's
// excluded hosts; a host only failed stays in it.
func TestSplitHealthExcluded(t *testing.T) {
	host := func(w uint32, f upstream.HealthFlag) *upstream.Host {
		h := &upstream.Host{Weight: w}
		h.SetHealthFlag(f)
		return h
	}
	hosts := []*upstream.Host{
		host(1, 0),
		host(2, upstream.FailedActiveHC|upstream.PendingActiveHC),
		host(4, upstream.FailedActiveHC|upstream.ExcludedViaImmediateHCFail),
		host(8, upstream.FailedActiveHC),
	}
	h, _, c := splitHealth(hosts, true)
	if len(h) != 1 || c.total != 2 || c.excluded != 2 || c.healthy != 1 {
		t.Fatalf("counts %+v, %d healthy; want total 2, excluded 2, healthy 1", c, len(h))
	}
	if c.totalWeight != 9 || c.healthyWeight != 1 {
		t.Errorf("weights: total %d, healthy %d; want 9 and 1", c.totalWeight, c.healthyWeight)
	}
	if s := stateOf(c); s.counts() != c {
		t.Errorf("state round trip: %+v != %+v", s.counts(), c)
	}
}

// TestExcludedHostsLeaveSpillover: a level of one healthy host and one
// excluded host takes all the load (1 of 1 available), where the same
// level with a failed host would spill to the next priority, as in
// Envoy's excluded-hosts example.
func TestExcludedHostsLeaveSpillover(t *testing.T) {
	mk := func(f upstream.HealthFlag) [][]*upstream.Host {
		p0 := []*upstream.Host{{Address: "a"}, {Address: "b"}}
		p0[1].SetHealthFlag(f)
		return [][]*upstream.Host{p0, {{Address: "c", Priority: 1}}}
	}
	for _, tc := range []struct {
		name string
		flag upstream.HealthFlag
		p0   uint32
	}{
		{"pending first check", upstream.FailedActiveHC | upstream.PendingActiveHC, 100},
		{"failed", upstream.FailedActiveHC, 70},
	} {
		b := New(mk(tc.flag), Config{})
		if got := b.loads.healthy[0]; got != tc.p0 {
			t.Errorf("%s: priority 0 takes %d%%, want %d%%", tc.name, got, tc.p0)
		}
	}
}
