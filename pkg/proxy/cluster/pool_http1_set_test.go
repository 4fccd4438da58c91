package cluster

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestHTTP1Pools: the list of a small set and the map of a large one find,
// replace and list the same pools.
func TestHTTP1Pools(t *testing.T) {
	for _, n := range []int{1, maxListedPools, maxListedPools + 1, 50} {
		ps := newHTTP1Pools(n)
		hosts := make([]*upstream.Host, n)
		for i := range hosts {
			hosts[i] = &upstream.Host{Address: "127.0.0.1:" + itoa(1000+i)}
			ps.put(hosts[i], &http1Pool{})
		}
		replaced := &http1Pool{}
		ps.put(hosts[0], replaced)
		if ps.get(hosts[0]) != replaced {
			t.Errorf("%d hosts: the replaced pool is not found", n)
		}
		if ps.get(&upstream.Host{}) != nil {
			t.Errorf("%d hosts: a pool for a host not in the set", n)
		}
		seen := map[*upstream.Host]bool{}
		for h, p := range ps.all() {
			if p == nil || ps.get(h) != p || seen[h] {
				t.Errorf("%d hosts: all yields %p for %s", n, p, h.Address)
			}
			seen[h] = true
		}
		if len(seen) != n {
			t.Errorf("%d hosts: all yields %d", n, len(seen))
		}
	}
	var none http1Pools
	for range none.all() {
		t.Error("the zero value yields a pool")
	}
}
