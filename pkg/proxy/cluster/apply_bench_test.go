package cluster

import (
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// BenchmarkApplyDiscoveredEDSClusters is the cluster manager's part of a
// CDS response of 5,000 new EDS clusters (the xds bench's shape: a name,
// EDS over ADS, a connect_timeout) applied to a manager that has none:
// their settings, construction and stats, and their warming. One op is
// one response into a new manager.
func BenchmarkApplyDiscoveredEDSClusters(b *testing.B) { benchApplyDiscovered(b, false) }

// BenchmarkApplyDiscoveredEDSClustersRendered is the same response, then
// each new cluster's assignment of one endpoint and the first
// /stats?usedonly walk after them, which merges the stats the update
// used into the used lists: what the xds bench's cds figure measures
// in the stats, less the management server, gRPC and the admin.
func BenchmarkApplyDiscoveredEDSClustersRendered(b *testing.B) { benchApplyDiscovered(b, true) }

func benchApplyDiscovered(b *testing.B, render bool) {
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
		m, store, clock := newTestManager(b, "[]")
		b.StartTimer()
		if err := m.ApplyDiscovered(cfgs, "v1", clock.now()); err != nil {
			b.Fatal(err)
		}
		if render {
			for _, c := range m.EDSClusters() {
				priorities, err := c.EDSHosts(&endpointv3.ClusterLoadAssignment{ClusterName: c.Name(), Endpoints: []*endpointv3.LocalityLbEndpoints{{
					LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
						Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
							Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
						}}},
					}}}},
				}}})
				if err != nil {
					b.Fatal(err)
				}
				c.SetEDSHosts(priorities)
				c.EDSStats().Success.Inc()
				c.EDSStats().Version.Set(1)
				c.EDSStats().UpdateTime.Set(1)
			}
			used := 0
			if err := store.Visit(stats.VisitOptions{UsedOnly: true}, func(*stats.Stat) error { used++; return nil }); err != nil {
				b.Fatal(err)
			}
			if used < n {
				b.Fatalf("%d used stats", used)
			}
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
}
