package bootstrap

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestDecodeWireMatchesBinaryFile checks that DecodeWire, with its
// shortcut for plain wire forms, finds what the binary file decoder finds,
// unknown fields and Any values at any depth included, under either
// policy.
func TestDecodeWireMatchesBinaryFile(t *testing.T) {
	endpoint := func() *endpointv3.LbEndpoint {
		return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
			}}},
		}}}
	}
	assignment := func(edit func(*endpointv3.LbEndpoint)) []byte {
		lbe := endpoint()
		if edit != nil {
			edit(lbe)
		}
		cla := &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{endpoint(), lbe},
		}}}
		b, err := proto.Marshal(cla)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	withUnknown := func(raw []byte) func(*endpointv3.LbEndpoint) {
		return func(lbe *endpointv3.LbEndpoint) {
			lbe.GetEndpoint().GetAddress().GetSocketAddress().ProtoReflect().SetUnknown(raw)
		}
	}
	anyWith := func(unknown bool) func(*endpointv3.LbEndpoint) {
		return func(lbe *endpointv3.LbEndpoint) {
			d := durationpb.New(1)
			if unknown {
				d.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1))
			}
			a, err := anypb.New(d)
			if err != nil {
				t.Fatal(err)
			}
			lbe.Metadata = &corev3.Metadata{TypedFilterMetadata: map[string]*anypb.Any{"f": a}}
		}
	}
	cases := map[string][]byte{
		"plain":         assignment(nil),
		"unknown field": assignment(withUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))),
		// port_value (3) is a varint; as bytes the decoder keeps it as an
		// unknown field.
		"wrong wire type": assignment(withUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte("x")))),
		"plain any":       assignment(anyWith(false)),
		"unknown in any":  assignment(anyWith(true)),
	}
	for name, data := range cases {
		for _, allow := range []bool{false, true} {
			d := Decoder{AllowUnknown: allow}
			want := new(endpointv3.ClusterLoadAssignment)
			wantUnknown, wantErr := d.DecodeBytes("x.pb", data, want)
			got := new(endpointv3.ClusterLoadAssignment)
			gotUnknown, gotErr := d.DecodeWire("", 0, data, got)
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Errorf("%s, allow %v: error %v, the file decoder's %v", name, allow, gotErr, wantErr)
				continue
			}
			if diff := cmp.Diff(wantUnknown, gotUnknown); diff != "" {
				t.Errorf("%s, allow %v: unknown fields (-file +wire):\n%s", name, allow, diff)
			}
			if wantErr != nil {
				continue
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s, allow %v: message (-file +wire):\n%s", name, allow, diff)
			}
		}
	}
	// Only the plain assignment takes the shortcut.
	md := new(endpointv3.ClusterLoadAssignment).ProtoReflect().Descriptor()
	for name, data := range cases {
		if got := plainWire(data, md, 0); got != (name == "plain") {
			t.Errorf("%s: plainWire %v", name, got)
		}
	}
	// The cases that must take the full check do reach it: strictly, each
	// unknown field is an error.
	for _, name := range []string{"unknown field", "wrong wire type", "unknown in any"} {
		if _, err := (Decoder{}).DecodeWire("", 0, cases[name], new(endpointv3.ClusterLoadAssignment)); err == nil {
			t.Errorf("%s: accepted strictly", name)
		}
	}
}
