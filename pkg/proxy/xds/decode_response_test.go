package xds

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
)

// TestDecodeResponseMatchesFileDecoder checks that a gRPC response decoded
// straight from its Any values gives what the file decoder gives for its
// wire form, and that what the shortcut does not handle goes to the file
// decoder.
func TestDecodeResponseMatchesFileDecoder(t *testing.T) {
	d := newTestDecoder(t)
	listener := func(name string, unknown []byte) *anypb.Any {
		raw, err := proto.Marshal(&listenerv3.Listener{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return &anypb.Any{TypeUrl: ListenerTypeURL, Value: append(raw, unknown...)}
	}
	wrapped := func(name string, inner *anypb.Any) *anypb.Any {
		a, err := anypb.New(&discoveryv3.Resource{Name: name, Version: "v", Resource: inner})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	field1000 := []byte{0xc0, 0x3e, 0x01}
	const clusterURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	tests := map[string]struct {
		resp  *discoveryv3.DiscoveryResponse
		allow bool
		// direct says the shortcut decodes it.
		direct bool
	}{
		"plain": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1", TypeUrl: ListenerTypeURL, Nonce: "n",
			Resources: []*anypb.Any{listener("a", nil), listener("b", nil)}}, direct: true},
		"no resources": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "2", Nonce: "n"}, direct: true},
		"unknown field allowed": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1",
			Resources: []*anypb.Any{listener("a", field1000)}}, allow: true, direct: true},
		"unknown field refused": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1",
			Resources: []*anypb.Any{listener("a", field1000)}}},
		"another type": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1",
			Resources: []*anypb.Any{{TypeUrl: clusterURL}}}},
		"another response type": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1", TypeUrl: clusterURL}},
		"empty":                 {resp: &discoveryv3.DiscoveryResponse{}},
		"wrapped": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1",
			Resources: []*anypb.Any{wrapped("a", listener("a", nil)), wrapped("", listener("b", nil))}}, direct: true},
		"wrapped, unknown field allowed": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1",
			Resources: []*anypb.Any{wrapped("a", listener("a", field1000))}}, allow: true, direct: true},
		"wrapped under another name": {resp: &discoveryv3.DiscoveryResponse{VersionInfo: "1",
			Resources: []*anypb.Any{wrapped("b", listener("a", nil))}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u, unknown, ok := d.decodeResponse(tc.resp, tc.allow)
			if ok != tc.direct {
				t.Fatalf("decoded directly: %v, want %v", ok, tc.direct)
			}
			data, err := proto.Marshal(tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			want, wantUnknown, wantErr := d.decodeBytes("response.pb", data, tc.allow)
			if !ok {
				// Each case passed on is one the file decoder refuses.
				if wantErr == nil {
					t.Errorf("passed on, but the file decoder accepts it")
				}
				return
			}
			if wantErr != nil {
				t.Fatalf("decoded directly, the file decoder refuses it: %v", wantErr)
			}
			if diff := cmp.Diff(want, u, protocmp.Transform()); diff != "" {
				t.Errorf("update (-file +direct):\n%s", diff)
			}
			if diff := cmp.Diff(wantUnknown, unknown); diff != "" {
				t.Errorf("unknown fields (-file +direct):\n%s", diff)
			}
		})
	}
}
