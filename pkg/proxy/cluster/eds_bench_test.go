package cluster

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// BenchmarkEDSOneEndpointChange is an EDS cluster of 10,000 endpoints
// getting a load assignment with one endpoint added, then one without it,
// alternately (each op is one assignment checked and installed); the
// decoding is the xds package's.
func BenchmarkEDSOneEndpointChange(b *testing.B) {
	m, _, _ := newTestManager(b, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	// Each update is a new decode, as over the wire: new messages.
	claims := []*endpointv3.ClusterLoadAssignment{assignment(10001), assignment(10000)}
	apply := func(cla *endpointv3.ClusterLoadAssignment) {
		p, err := c.EDSHosts(cla)
		if err != nil {
			b.Fatal(err)
		}
		c.SetEDSHosts(p)
	}
	apply(assignment(10000))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		apply(claims[i%2])
	}
}

// BenchmarkEDSOneEndpointChangeSameMessages is BenchmarkEDSOneEndpointChange
// as the xds decoder delivers it: the 10,000 unchanged entries are the
// previous response's messages, only the added one is new.
func BenchmarkEDSOneEndpointChangeSameMessages(b *testing.B) {
	m, _, _ := newTestManager(b, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	base := assignment(10000).Endpoints[0].LbEndpoints
	apply := edsApplier(b, c)
	apply(base)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 1 {
			apply(base)
			continue
		}
		apply(append(base[:10000:10000], benchEndpoint(10000)))
	}
}

// assignment is a load assignment of n endpoints, new messages.
func assignment(n int) *endpointv3.ClusterLoadAssignment {
	eps := make([]*endpointv3.LbEndpoint, n)
	for i := range eps {
		eps[i] = benchEndpoint(i)
	}
	return &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: eps}}}
}

// benchEndpoint is the i-th endpoint of the benchmarks' assignments.
func benchEndpoint(i int) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "10.0." + itoa(i/250) + "." + itoa(i%250+1), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
		}}},
	}}}
}

// itoa is strconv.Itoa for the benchmark's small numbers.
func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// BenchmarkEDSSubsetOneEndpointChange is
// BenchmarkEDSOneEndpointChangeSameMessages for a cluster with
// lb_subset_config: 10,000 endpoints in ten versions (subsets of 1,000 by
// version, and of 500 by version and stage), one endpoint added and
// removed again, alternately, the unchanged entries being the previous
// response's messages.
func BenchmarkEDSSubsetOneEndpointChange(b *testing.B) {
	m, _, _ := newTestManager(b, `
- name: backend
  type: EDS
  lb_subset_config:
    fallback_policy: ANY_ENDPOINT
    subset_selectors:
    - keys: [version]
    - keys: [version, stage]`)
	c := m.Cluster("backend")
	all := subsetAssignment(10001).Endpoints[0].LbEndpoints
	base := all[:10000:10000]
	apply := edsApplier(b, c)
	apply(base)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 1 {
			apply(base)
			continue
		}
		apply(all)
	}
}

// subsetAssignment is assignment(n) with each endpoint's "envoy.lb"
// metadata: version v0 to v9 and stage a or b by its index.
func subsetAssignment(n int) *endpointv3.ClusterLoadAssignment {
	cla := assignment(n)
	for i, lbe := range cla.Endpoints[0].LbEndpoints {
		lbe.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": {Fields: map[string]*structpb.Value{
			"version": structpb.NewStringValue("v" + itoa(i%10)),
			"stage":   structpb.NewStringValue([]string{"a", "b"}[i/10%2]),
		}}}}
	}
	return cla
}

// edsApplier returns a function that gives cluster c (of "backend") the
// endpoints eps, as one EDS update.
func edsApplier(b *testing.B, c *Cluster) func(eps []*endpointv3.LbEndpoint) {
	return func(eps []*endpointv3.LbEndpoint) {
		p, err := c.EDSHosts(&endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: eps}}})
		if err != nil {
			b.Fatal(err)
		}
		c.SetEDSHosts(p)
	}
}
