package xds

import (
	"fmt"
	"math/rand/v2"
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

// TestEndpointReuseRandomEdits decodes 300 responses of one assignment
// with random edits between them (entries inserted, removed, changed,
// listed twice, moved to the other locality), each compared with the
// whole decode; the entries are first compared with the last response's
// at their place, so an entry taken from a wrong place would decode to
// another endpoint than its bytes.
func TestEndpointReuseRandomEdits(t *testing.T) {
	var r endpointReuse
	dec := bootstrap.Decoder{}
	rng := rand.New(rand.NewPCG(5, 6))
	ports := make([]uint32, 200)
	for i := range ports {
		ports[i] = 80
	}
	placedHits := 0
	for step := range 300 {
		for range rng.IntN(4) {
			i := rng.IntN(len(ports))
			switch rng.IntN(4) {
			case 0:
				ports = append(ports[:i], ports[i+1:]...)
			case 1:
				ports = append(ports[:i+1], ports[i:]...)
			default:
				ports[i] = 80 + rng.Uint32N(3)
			}
		}
		cla := testAssignment(len(ports), func(i int) uint32 { return ports[i] })
		if rng.IntN(10) == 0 && len(cla.Endpoints[0].LbEndpoints) > 1 {
			// The first locality's last entry moves to the second's start.
			g0 := cla.Endpoints[0].LbEndpoints
			cla.Endpoints[1].LbEndpoints = append([]*endpointv3.LbEndpoint{g0[len(g0)-1]}, cla.Endpoints[1].LbEndpoints...)
			cla.Endpoints[0].LbEndpoints = g0[:len(g0)-1]
		}
		b, err := proto.Marshal(cla)
		if err != nil {
			t.Fatal(err)
		}
		r.begin()
		hadLast := r.last["big"] != nil
		got, ok := r.decode(dec, 2, b)
		r.end()
		if !ok {
			t.Fatalf("step %d: not decoded by parts", step)
		}
		if hadLast {
			placedHits++
		}
		want := new(endpointv3.ClusterLoadAssignment)
		if err := proto.Unmarshal(b, want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(want, got) {
			t.Fatalf("step %d: decoded by parts, not as the whole decode:\n%s", step, cmp.Diff(want, got, protocmp.Transform()))
		}
	}
	if placedHits < 290 {
		t.Fatalf("only %d of 300 responses had the last one's places", placedHits)
	}
}
