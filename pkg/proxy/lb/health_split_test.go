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
	if h, d := splitHealth(all); &h[0] != &all[0] || len(h) != 4 || d != nil {
		t.Fatalf("all healthy: %d healthy (shared %v), %d degraded", len(h), &h[0] == &all[0], len(d))
	}
	if h, d := splitHealth(nil); h != nil || d != nil {
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
			h, d := splitHealth(hosts)
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
	if h, d := splitHealth(one); h != nil || d != nil {
		t.Errorf("one unhealthy host: healthy %v, degraded %v", h, d)
	}
}
