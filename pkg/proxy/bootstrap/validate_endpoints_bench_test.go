package bootstrap

import (
	"strconv"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// BenchmarkValidateLoadAssignment checks a load assignment of 10,000
// plain endpoints, all new to the check (an EDS cluster's first large
// assignment): with the plain-shape shortcut, and with the reflective
// check of every entry it replaces.
func BenchmarkValidateLoadAssignment(b *testing.B) {
	eps := make([]*endpointv3.LbEndpoint, 10000)
	for i := range eps {
		eps[i] = lbEndpoint(uint32(1000 + i))
		eps[i].GetEndpoint().GetAddress().GetSocketAddress().Address = "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1)
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "svc", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: eps}}}
	for _, bc := range []struct {
		name  string
		plain bool
	}{{"shortcut", true}, {"walk", false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := validateLoadAssignment(cla, nil, bc.plain && plainEndpoints, bc.plain && plainAssignments); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateSmallLoadAssignment is the check of one of the many
// one-endpoint assignments of a large EDS response, with and without the
// plain-assignment shortcut (isPlainAssignment).
func BenchmarkValidateSmallLoadAssignment(b *testing.B) {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "svc", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{lbEndpoint(8080)}}}}
	for _, bc := range []struct {
		name string
		top  bool
	}{{"shortcut", true}, {"walk", false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := validateLoadAssignment(cla, nil, plainEndpoints, bc.top && plainAssignments); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
