package bootstrap

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// edsCluster is a plain EDS cluster, as a control plane sends thousands
// of: nothing in it is deprecated.
func edsCluster() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 "outbound|8080||svc.ns.svc.cluster.local",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		ConnectTimeout:       durationpb.New(time.Second),
		LbPolicy:             clusterv3.Cluster_LEAST_REQUEST,
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			ServiceName: "outbound|8080||svc.ns.svc.cluster.local",
			EdsConfig: &corev3.ConfigSource{
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
				ResourceApiVersion:    corev3.ApiVersion_V3,
			},
		},
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			Priority: corev3.RoutingPriority_DEFAULT,
		}}},
		CommonLbConfig: &clusterv3.Cluster_CommonLbConfig{},
	}
}

// BenchmarkDeprecatedEDSCluster is the cost of looking for deprecated
// fields in one plain EDS cluster, as the discovery path does for each.
func BenchmarkDeprecatedEDSCluster(b *testing.B) {
	c := edsCluster()
	var s DeprecatedScanner
	b.ReportAllocs()
	for b.Loop() {
		if got := s.Scan(c, "resources[0]"); len(got) != 0 {
			b.Fatal(got)
		}
	}
}
