package cluster

import (
	"fmt"
	"runtime"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// staticClusters builds n cluster configurations of hostsEach hosts.
func staticClusters(n, hostsEach int) []*clusterv3.Cluster {
	cfgs := make([]*clusterv3.Cluster, n)
	for i := range cfgs {
		var eps []*endpointv3.LbEndpoint
		for j := range hostsEach {
			eps = append(eps, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address:       fmt.Sprintf("10.%d.%d.%d", i/250%250, j/250%250, j%250+1),
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
				}}},
			}}})
		}
		name := fmt.Sprintf("service-%04d", i)
		cfgs[i] = &clusterv3.Cluster{
			Name: name,
			LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{
				{Locality: &corev3.Locality{Zone: "zone-a"}, LbEndpoints: eps},
			}},
		}
	}
	return cfgs
}

// heapOf returns the live heap that build leaves behind, after garbage
// collection, with the configurations themselves excluded (they belong to
// the bootstrap, not to the clusters).
func heapOf(b *testing.B, cfgs []*clusterv3.Cluster) float64 {
	var total float64
	for b.Loop() {
		store := stats.NewStore()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m, err := NewManager(cfgs, Options{Stats: store})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		total += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(m)
		runtime.KeepAlive(store)
	}
	return total / float64(b.N)
}

// BenchmarkClusterMemory reports the heap each static cluster costs (its
// stats, load balancer, pools, one host), from 10 to 10,000 clusters. The
// goal is 10 KB or less.
func BenchmarkClusterMemory(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			cfgs := staticClusters(n, 1)
			b.ReportMetric(heapOf(b, cfgs)/float64(n), "B/cluster")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkHostMemory reports the heap each host of a cluster costs, from
// 10 to 1,000 hosts: the slope between a cluster of one host and one of n.
// The goal is 1 KB or less.
func BenchmarkHostMemory(b *testing.B) {
	base := staticClusters(1, 1)
	var one float64
	b.Run("hosts=1", func(b *testing.B) {
		one = heapOf(b, base)
		b.ReportMetric(0, "ns/op")
	})
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			cfgs := staticClusters(1, n)
			b.ReportMetric((heapOf(b, cfgs)-one)/float64(n-1), "B/host")
			b.ReportMetric(0, "ns/op")
		})
	}
}
