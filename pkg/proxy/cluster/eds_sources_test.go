package cluster

import (
	"slices"
	"strconv"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestEDSSameMessagesKeepHosts: a large assignment's entries that are the
// previous assignment's messages (as the xds decoder hands back unchanged
// entries) keep their hosts by place, including around a removal and an
// insertion; the same message listed twice is two hosts; and a message
// whose locality weight or priority changed gets a new host with the new
// values. A small assignment keeps no entries.
func TestEDSSameMessagesKeepHosts(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	msgs := claOf(portsFrom(9000, 100)...).Endpoints[0].LbEndpoints
	apply := func(levels ...*endpointv3.LocalityLbEndpoints) []*upstream.Host {
		t.Helper()
		hosts := applyLevels(t, c, levels...)
		for i, h := range hosts {
			if slices.Index(hosts, h) != i {
				t.Fatalf("host %s installed twice", h.Address)
			}
		}
		return hosts
	}
	first := apply(&endpointv3.LocalityLbEndpoints{LbEndpoints: msgs})
	if c.eds.sources.Load() == nil {
		t.Fatal("a large assignment's entries are not kept")
	}
	// The entries are found by place, without a comparison.
	r := newHostReuse(c.set.Load())
	r.withSources(c.eds.sources.Load())
	if h := r.takeSource(msgs[0], 0, r.groupMatch(sourceGroup{})); h != first[0] {
		t.Fatalf("takeSource gave %v, want the first host", h)
	}
	if h := r.takeSource(msgs[1], 0, r.groupMatch(sourceGroup{locality: upstream.Locality{Zone: "a"}})); h != nil {
		t.Fatalf("takeSource gave %v for another locality", h)
	}

	// 10 removed, a new entry before 50, 20 listed twice.
	fresh := claOf(9500).Endpoints[0].LbEndpoints[0]
	var next []*endpointv3.LbEndpoint
	for i, lbe := range msgs {
		switch i {
		case 10:
			continue
		case 20:
			next = append(next, lbe)
		case 50:
			next = append(next, fresh)
		}
		next = append(next, lbe)
	}
	second := apply(&endpointv3.LocalityLbEndpoints{LbEndpoints: next})
	if len(second) != 101 {
		t.Fatalf("%d hosts, want 101", len(second))
	}
	for i, h := range second {
		want := "127.0.0.1:" + strconv.Itoa(int(next[i].GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()))
		if h.Address != want {
			t.Fatalf("host %d is %s, want %s", i, h.Address, want)
		}
		was := slices.Index(msgs, next[i])
		switch {
		case next[i] == fresh || i > 0 && next[i-1] == next[i]:
			// New, or the second of the pair (the first keeps the host).
			if slices.Contains(first, h) {
				t.Errorf("host %d (%s) reused, want a new one", i, h.Address)
			}
		case h != first[was]:
			t.Errorf("host %d (%s) rebuilt, want the one entry %d built", i, h.Address, was)
		}
	}

	// The same messages in a weighted locality, then at priority 1:
	// every host is new, with the new values.
	for _, lle := range []*endpointv3.LocalityLbEndpoints{
		{LbEndpoints: next, LoadBalancingWeight: wrapperspb.UInt32(5), Locality: &corev3.Locality{Zone: "a"}},
		{LbEndpoints: next, Priority: 1},
	} {
		before := c.Hosts()
		after := apply(lle)
		for i, h := range after {
			if slices.Contains(before, h) {
				t.Fatalf("host %d (%s) kept across a change of its locality or priority", i, h.Address)
			}
			if h.Priority != lle.GetPriority() || h.LocalityWeight != lle.GetLoadBalancingWeight().GetValue() || h.Locality.Zone != lle.GetLocality().GetZone() {
				t.Fatalf("host %d: priority %d, locality weight %d, zone %q; want %d, %d, %q", i, h.Priority, h.LocalityWeight, h.Locality.Zone,
					lle.GetPriority(), lle.GetLoadBalancingWeight().GetValue(), lle.GetLocality().GetZone())
			}
		}
	}

	apply(&endpointv3.LocalityLbEndpoints{LbEndpoints: msgs[:3]})
	if c.eds.sources.Load() != nil {
		t.Error("a small assignment's entries are kept")
	}
}

// TestEDSSameMessagesAcrossGroups: with two localities of one priority,
// the same messages keep their hosts while each stays in its group, and
// a message moved to the other group, at the same place of the level,
// gets a new host with that group's locality and weight.
func TestEDSSameMessagesAcrossGroups(t *testing.T) {
	c := edsBackend(t)
	msgs := claOf(portsFrom(9000, 100)...).Endpoints[0].LbEndpoints
	group := func(zone string, w uint32, eps []*endpointv3.LbEndpoint) *endpointv3.LocalityLbEndpoints {
		return &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{Zone: zone}, LoadBalancingWeight: wrapperspb.UInt32(w), LbEndpoints: eps}
	}
	apply := func(levels ...*endpointv3.LocalityLbEndpoints) []*upstream.Host {
		t.Helper()
		return applyLevels(t, c, levels...)
	}
	first := apply(group("a", 1, msgs[:50]), group("b", 2, msgs[50:]))
	same := apply(group("a", 1, msgs[:50]), group("b", 2, msgs[50:]))
	if !slices.Equal(first, same) {
		t.Fatal("the same groups of the same messages did not keep their hosts")
	}
	// Entry 50 moves to the end of group a: the same place in the level.
	moved := apply(group("a", 1, msgs[:51]), group("b", 2, msgs[51:]))
	for i, h := range moved {
		switch {
		case i == 50:
			if h == first[50] || h.Locality.Zone != "a" || h.LocalityWeight != 1 {
				t.Fatalf("the moved entry's host: kept %v, zone %q, weight %d", h == first[50], h.Locality.Zone, h.LocalityWeight)
			}
		case h != first[i]:
			t.Fatalf("host %d (%s) rebuilt", i, h.Address)
		}
	}
}

// edsBackend is a test manager's EDS cluster named backend.
func edsBackend(tb testing.TB) *Cluster {
	m, _, _ := newTestManager(tb, `
- name: backend
  type: EDS`)
	return m.Cluster("backend")
}

// applyLevels installs the assignment of levels in c, an EDS cluster of
// the name backend, and returns its hosts.
func applyLevels(t *testing.T, c *Cluster, levels ...*endpointv3.LocalityLbEndpoints) []*upstream.Host {
	t.Helper()
	p, err := c.EDSHosts(&endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: levels})
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(p)
	return c.Hosts()
}

// portsFrom is n ports from first on.
func portsFrom(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}
