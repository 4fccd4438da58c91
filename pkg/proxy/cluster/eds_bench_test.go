package cluster

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
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
	assignment := func(n int) *endpointv3.ClusterLoadAssignment {
		eps := make([]*endpointv3.LbEndpoint, n)
		for i := range eps {
			eps[i] = &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: "10.0." + itoa(i/250) + "." + itoa(i%250+1), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
				}}},
			}}}
		}
		return &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: eps}}}
	}
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

// itoa is strconv.Itoa for the benchmark's small numbers.
func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
