package cluster

import (
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// BenchmarkApplyDiscoveredEDSClusters is the cluster manager's part of a
// CDS response of 5,000 new EDS clusters (the xds bench's shape: a name,
// EDS over ADS, a connect_timeout) applied to a manager that has none:
// their settings, construction and stats, and their warming. One op is
// one response into a new manager.
func BenchmarkApplyDiscoveredEDSClusters(b *testing.B) {
	const n = 5000
	cfgs := make([]*clusterv3.Cluster, n)
	for i := range cfgs {
		name := "c" + strconv.Itoa(i)
		cfgs[i] = &clusterv3.Cluster{
			Name:                 name,
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			ConnectTimeout:       durationpb.New(time.Second),
			EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: &corev3.ConfigSource{
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
				ResourceApiVersion:    corev3.ApiVersion_V3,
			}},
		}
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		m, _, clock := newTestManager(b, "[]")
		b.StartTimer()
		if err := m.ApplyDiscovered(cfgs, "v1", clock.now()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
}
