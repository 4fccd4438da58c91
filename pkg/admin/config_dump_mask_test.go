package admin

import (
	"slices"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestParseFieldMask(t *testing.T) {
	for name, tc := range map[string]struct {
		in    string
		paths []string
		debug string
	}{
		"one":            {in: "a", paths: []string{"a"}, debug: "paths: \"a\"\n"},
		"several":        {in: "a.b,c", paths: []string{"a.b", "c"}, debug: "paths: \"a.b\"\npaths: \"c\"\n"},
		"empty skipped":  {in: ",a,,b,", paths: []string{"a", "b"}, debug: "paths: \"a\"\npaths: \"b\"\n"},
		"only commas":    {in: ",,", paths: nil, debug: ""},
		"escaped":        {in: "q\"\\\n\t\x01é", paths: []string{"q\"\\\n\t\x01é"}, debug: `paths: "q\"\\\n\t\001\303\251"` + "\n"},
		"spaces kept":    {in: " a", paths: []string{" a"}, debug: "paths: \" a\"\n"},
		"duplicate kept": {in: "a,a", paths: []string{"a", "a"}, debug: "paths: \"a\"\npaths: \"a\"\n"},
	} {
		t.Run(name, func(t *testing.T) {
			m := parseFieldMask(tc.in)
			if !slices.Equal(m.paths, tc.paths) {
				t.Errorf("paths = %q, want %q", m.paths, tc.paths)
			}
			if got := m.debugString(); got != tc.debug {
				t.Errorf("debugString = %q, want %q", got, tc.debug)
			}
		})
	}
}

func TestFieldMaskApply(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	node := &corev3.Node{Id: "n", Cluster: "c", Locality: &corev3.Locality{Zone: "z", Region: "r"}}
	full := func() *adminv3.BootstrapConfigDump {
		return &adminv3.BootstrapConfigDump{
			Bootstrap:   &bootstrapv3.Bootstrap{Node: proto.Clone(node).(*corev3.Node)},
			LastUpdated: at,
		}
	}
	withAny := func(a *anypb.Any) *adminv3.ClustersConfigDump_StaticCluster {
		return &adminv3.ClustersConfigDump_StaticCluster{Cluster: a, LastUpdated: at}
	}
	for name, tc := range map[string]struct {
		mask    string
		in      proto.Message
		want    proto.Message // nil: the mask is refused
		wantErr bool
	}{
		"whole field": {
			mask: "last_updated", in: full(), want: &adminv3.BootstrapConfigDump{LastUpdated: at},
		},
		"nested field": {
			mask: "bootstrap.node.locality.zone", in: full(),
			want: &adminv3.BootstrapConfigDump{Bootstrap: &bootstrapv3.Bootstrap{Node: &corev3.Node{Locality: &corev3.Locality{Zone: "z"}}}},
		},
		"shorter path wins": {
			mask: "bootstrap.node.id,bootstrap.node", in: full(),
			want: &adminv3.BootstrapConfigDump{Bootstrap: &bootstrapv3.Bootstrap{Node: proto.Clone(node).(*corev3.Node)}},
		},
		"siblings": {
			mask: "bootstrap.node.id,bootstrap.node.cluster,last_updated", in: full(),
			want: &adminv3.BootstrapConfigDump{Bootstrap: &bootstrapv3.Bootstrap{Node: &corev3.Node{Id: "n", Cluster: "c"}}, LastUpdated: at},
		},
		"unset field named": { // its parent stays, empty, as with protobuf's TrimMessage
			mask: "bootstrap.admin", in: full(), want: &adminv3.BootstrapConfigDump{Bootstrap: &bootstrapv3.Bootstrap{}},
		},
		"unknown field":       {mask: "bootstrap.nope", in: full(), wantErr: true},
		"through a scalar":    {mask: "bootstrap.node.id.x", in: full(), wantErr: true},
		"through a list":      {mask: "bootstrap.node.extensions.name", in: full(), wantErr: true},
		"through a map":       {mask: "bootstrap.node.metadata.filter_metadata.x", in: full(), wantErr: true},
		"camel case refused":  {mask: "lastUpdated", in: full(), wantErr: true},
		"one bad path of two": {mask: "last_updated,nope", in: full(), wantErr: true},
		"inside an any": {
			mask: "cluster.name", in: withAny(mustAny(t, sampleCluster(t, "c1"))),
			want: &adminv3.ClustersConfigDump_StaticCluster{Cluster: mustAny(t, &clusterv3.Cluster{Name: "c1"})},
		},
		"inside an unset any": {
			mask: "cluster.anything.at.all", in: &adminv3.ClustersConfigDump_StaticCluster{LastUpdated: at},
			want: &adminv3.ClustersConfigDump_StaticCluster{},
		},
		"inside an any, unknown field": {
			mask: "cluster.nope", in: withAny(mustAny(t, sampleCluster(t, "c1"))), wantErr: true,
		},
		"inside an any of an unknown type": {
			mask: "cluster.name", in: withAny(&anypb.Any{TypeUrl: "type.googleapis.com/no.such.Type"}), wantErr: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := proto.Clone(tc.in)
			err := parseFieldMask(tc.mask).apply(got.ProtoReflect())
			if tc.wantErr {
				if err == nil {
					t.Fatalf("mask %q accepted, want an error", tc.mask)
				}
				if !proto.Equal(got, tc.in) {
					t.Errorf("a refused mask changed the message")
				}
				return
			}
			if err != nil {
				t.Fatalf("mask %q: %v", tc.mask, err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("masked message differs (-want +got):\n%s", diff)
			}
		})
	}
}
