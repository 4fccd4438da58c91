package xds

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestClusterDecoderReusesUnchanged checks that the cluster decoder hands
// back the last response's message for a cluster resent byte for byte,
// decodes a changed one anew, never keeps one with unknown fields, and
// forgets the clusters a response no longer has.
func TestClusterDecoderReusesUnchanged(t *testing.T) {
	d, err := newDecoder(clusterTypeURL)
	if err != nil {
		t.Fatal(err)
	}
	resource := func(name string, timeout int64, unknown []byte) *anypb.Any {
		t.Helper()
		raw, err := proto.Marshal(&clusterv3.Cluster{Name: name, ConnectTimeout: durationpb.New(time.Duration(timeout) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		return &anypb.Any{TypeUrl: clusterTypeURL, Value: append(raw, unknown...)}
	}
	decode := func(allow bool, rs ...*anypb.Any) []*clusterv3.Cluster {
		t.Helper()
		u, _, ok := d.decodeResponse(&discoveryv3.DiscoveryResponse{VersionInfo: "v", TypeUrl: clusterTypeURL, Resources: rs}, allow)
		if !ok {
			t.Fatal("the response was not decoded")
		}
		out := make([]*clusterv3.Cluster, len(u.Resources))
		for i, m := range u.Resources {
			out[i] = m.(*clusterv3.Cluster)
		}
		return out
	}
	field1000 := []byte{0xc0, 0x3e, 0x01}
	first := decode(true, resource("a", 1, nil), resource("b", 1, nil), resource("odd", 1, field1000))
	second := decode(true, resource("a", 1, nil), resource("b", 2, nil), resource("odd", 1, field1000))
	if second[0] != first[0] {
		t.Error("the unchanged cluster a was decoded again")
	}
	if second[1] == first[1] || second[1].GetConnectTimeout().GetSeconds() != 2 {
		t.Errorf("the changed cluster b: the same message %v, connect_timeout %v", second[1] == first[1], second[1].GetConnectTimeout())
	}
	if second[2] == first[2] {
		t.Error("a cluster with an unknown field was kept for the next response")
	}
	if len(d.whole.known) != 2 {
		t.Errorf("%d clusters kept, want 2 (a and the new b)", len(d.whole.known))
	}
	third := decode(false, resource("b", 2, nil))
	if third[0] != second[1] {
		t.Error("the unchanged cluster b was decoded again")
	}
	if len(d.whole.known) != 1 {
		t.Errorf("%d clusters kept after a response of one, want 1", len(d.whole.known))
	}
	if again := decode(false, resource("a", 1, nil)); again[0] == first[0] {
		t.Error("a cluster absent from the last response was still kept")
	}

	listeners, err := newDecoder(ListenerTypeURL)
	if err != nil {
		t.Fatal(err)
	}
	if listeners.whole != nil {
		t.Error("the listener decoder keeps its resources: only clusters are kept")
	}
}
