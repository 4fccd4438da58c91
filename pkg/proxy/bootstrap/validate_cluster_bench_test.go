package bootstrap

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// BenchmarkValidateDiscoveredCluster checks what CDS and EDS check for
// each of a control plane's small clusters: an EDS cluster over ADS and
// its one-endpoint load assignment. With 10,000 clusters in one response
// this runs 10,000 times before the first is ready.
func BenchmarkValidateDiscoveredCluster(b *testing.B) {
	c := &clusterv3.Cluster{
		Name:                 "c1234",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		ConnectTimeout:       durationpb.New(time.Second),
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: "c1234", EdsConfig: &corev3.ConfigSource{
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			ResourceApiVersion:    corev3.ApiVersion_V3,
		}},
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "c1234", Endpoints: []*endpointv3.LocalityLbEndpoints{{
		LbEndpoints: []*endpointv3.LbEndpoint{lbEndpoint(8080)},
	}}}
	b.Run("cluster", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := ValidateCluster(c, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("assignment", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := ValidateLoadAssignment(cla, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
