package cluster

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestEDSUpdateKeepsUnchangedHosts: an endpoint that a new load assignment
// repeats unchanged keeps its host (and so its /clusters counters), one
// changed in any setting or moved gets a new host, and an address listed
// twice is two hosts.
func TestEDSUpdateKeepsUnchangedHosts(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	set := func(ports []uint32, weight8081 uint32, zone8082 string) {
		t.Helper()
		cla := claOf(ports...)
		for _, lbe := range cla.Endpoints[0].LbEndpoints {
			if lbe.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue() == 8081 && weight8081 != 0 {
				lbe.LoadBalancingWeight = wrapperspb.UInt32(weight8081)
			}
		}
		if zone8082 != "" {
			// 8082 moves to a locality of its own.
			var rest, moved = cla.Endpoints[0].LbEndpoints[:0:0], cla.Endpoints[0].LbEndpoints[:0:0]
			for _, lbe := range cla.Endpoints[0].LbEndpoints {
				if lbe.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue() == 8082 {
					moved = append(moved, lbe)
				} else {
					rest = append(rest, lbe)
				}
			}
			cla.Endpoints[0].LbEndpoints = rest
			other := claOf()
			other.Endpoints[0].LbEndpoints = moved
			other.Endpoints[0].Locality = &corev3.Locality{Zone: zone8082}
			cla.Endpoints = append(cla.Endpoints, other.Endpoints[0])
		}
		p, err := c.EDSHosts(cla)
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(p)
	}
	set([]uint32{8080, 8081, 8082}, 0, "")
	before := map[string]*upstream.Host{}
	for _, h := range c.Hosts() {
		h.Stats.RqTotal.Add(7)
		before[h.Address] = h
	}
	// 8080 unchanged, 8081 reweighted, 8082 moved, 8083 new.
	set([]uint32{8080, 8081, 8082, 8083}, 3, "b")
	got := map[string]int{}
	for _, h := range c.Hosts() {
		got[h.Address]++
		kept := before[h.Address] == h
		if want := h.Address == "127.0.0.1:8080"; kept != want {
			t.Errorf("%s: kept %v, want %v", h.Address, kept, want)
		}
		if kept && h.Stats.RqTotal.Load() != 7 {
			t.Errorf("%s: rq_total %d after the update, want 7", h.Address, h.Stats.RqTotal.Load())
		}
	}
	if len(got) != 4 {
		t.Fatalf("hosts %v", got)
	}
	// The same address twice is two hosts, even where one was.
	set([]uint32{8080, 8080}, 0, "")
	hosts := c.Hosts()
	if len(hosts) != 2 || hosts[0] == hosts[1] {
		t.Fatalf("an address listed twice: %d hosts, distinct %v", len(hosts), len(hosts) == 2 && hosts[0] != hosts[1])
	}
	if hosts[0] != before["127.0.0.1:8080"] && hosts[1] != before["127.0.0.1:8080"] {
		t.Error("neither of the two kept the unchanged host")
	}
}
