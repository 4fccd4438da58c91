package xds

import (
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// testAssignment is a load assignment of n endpoints over two localities
// (the second of priority 1), with a policy, each endpoint's port from
// port(i).
func testAssignment(n int, port func(i int) uint32) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "big", Policy: &endpointv3.ClusterLoadAssignment_Policy{
		OverprovisioningFactor: wrapperspb.UInt32(150),
	}}
	for g := range 2 {
		lle := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{Zone: fmt.Sprint("z", g)}, Priority: uint32(g),
			LoadBalancingWeight: wrapperspb.UInt32(uint32(g + 1))}
		for i := g; i < n; i += 2 {
			lle.LbEndpoints = append(lle.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: fmt.Sprintf("10.0.%d.%d", i/200, i%200+1), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port(i)},
				}}},
			}}})
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	return cla
}

// TestEndpointReuseDecodesAsWhole checks that a large load assignment
// decoded by parts is the assignment decoded whole, that the next
// response's unchanged endpoints are the same messages and its changed
// one a new message, and that small or unplain assignments are left to
// the whole decode.
func TestEndpointReuseDecodesAsWhole(t *testing.T) {
	var r endpointReuse
	dec := bootstrap.Decoder{}
	decode := func(cla *endpointv3.ClusterLoadAssignment) (*endpointv3.ClusterLoadAssignment, bool) {
		t.Helper()
		b, err := proto.Marshal(cla)
		if err != nil {
			t.Fatal(err)
		}
		r.begin()
		defer r.end()
		got, ok := r.decode(dec, 2, b)
		if ok {
			want := new(endpointv3.ClusterLoadAssignment)
			if err := proto.Unmarshal(b, want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("decoded by parts (-whole +parts):\n%s", diff)
			}
		}
		return got, ok
	}
	first, ok := decode(testAssignment(200, func(int) uint32 { return 80 }))
	if !ok {
		t.Fatal("a plain assignment of 200 endpoints was not decoded by parts")
	}
	second, ok := decode(testAssignment(200, func(i int) uint32 { return 80 + uint32(i/199) })) // the last one changes
	if !ok {
		t.Fatal("the second response was not decoded by parts")
	}
	for g, lle := range second.GetEndpoints() {
		for j, lbe := range lle.GetLbEndpoints() {
			same := lbe == first.GetEndpoints()[g].GetLbEndpoints()[j]
			if changed := g == 1 && j == len(lle.GetLbEndpoints())-1; same == changed {
				t.Errorf("endpoints[%d].lb_endpoints[%d]: the same message %v, changed %v", g, j, same, changed)
			}
		}
	}
	if len(r.known) != 200 {
		t.Errorf("%d endpoints kept after the second response, want 200", len(r.known))
	}
	if _, ok := decode(testAssignment(20, func(int) uint32 { return 80 })); ok {
		t.Error("a small assignment was decoded by parts")
	}
	if len(r.known) != 0 {
		t.Errorf("%d endpoints kept after a response without large assignments", len(r.known))
	}
	odd := testAssignment(200, func(int) uint32 { return 80 })
	odd.Endpoints[1].LbEndpoints[3].ProtoReflect().SetUnknown([]byte{0xc0, 0x3e, 0x01})
	if _, ok := decode(odd); ok {
		t.Error("an assignment with an unknown field was decoded by parts")
	}
}
