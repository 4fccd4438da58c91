package server

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestKeptAssignment: a small accepted load assignment is kept as its wire
// form and reads back equal, a large one is the message itself, and none
// reads as nil.
func TestKeptAssignment(t *testing.T) {
	of := func(n int) *endpointv3.ClusterLoadAssignment {
		lle := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{Zone: "a"}}
		for i := range n {
			lle.LbEndpoints = append(lle.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(1000 + i)},
				}}},
			}}})
		}
		return &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{lle}}
	}
	small := of(2)
	k := keepAssignment(small)
	if k.msg != nil || len(k.wire) == 0 {
		t.Fatalf("a small assignment kept as %+v", k)
	}
	if diff := cmp.Diff(small, k.get(), protocmp.Transform()); diff != "" {
		t.Errorf("read back (-kept +read):\n%s", diff)
	}
	large := of(minKeptMessage)
	if got := keepAssignment(large).get(); got != large {
		t.Error("a large assignment is not kept as its message")
	}
	if (keptAssignment{}).get() != nil {
		t.Error("no assignment reads as one")
	}
}
