package bootstrap

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// BenchmarkValidatePlainCluster is the check of one of the many EDS
// clusters of a large CDS response (the xds bench's: a name, EDS over
// ADS, a connect_timeout), with and without the plain-cluster shortcut
// (isPlainCluster).
func BenchmarkValidatePlainCluster(b *testing.B) {
	c := &clusterv3.Cluster{
		Name:                 "c1234",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		ConnectTimeout:       durationpb.New(time.Second),
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: "c1234", EdsConfig: &corev3.ConfigSource{
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			ResourceApiVersion:    corev3.ApiVersion_V3,
		}},
	}
	for _, bc := range []struct {
		name  string
		plain bool
	}{{"shortcut", true}, {"walk", false}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.plain && !isPlainCluster(c, plainClusters) {
				b.Fatal("the cluster does not take the shortcut")
			}
			b.ReportAllocs()
			for range b.N {
				if err := validateCluster(c, nil, bc.plain && plainClusters); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
