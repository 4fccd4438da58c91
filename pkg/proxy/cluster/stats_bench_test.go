package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// BenchmarkClusterStatsPerCluster makes the stats every cluster has (its
// traffic stats, the load balancer's, both priorities' breaker gauges and
// the update stats) for 1,000 clusters in a fresh store per op, as a CDS
// update of new clusters does, and reports the time and allocations per
// cluster. It guards the stats blocks (stats.Template): made one lookup
// per name, each cluster cost several times as much (BENCHMARKS.md, issue
// #16).
func BenchmarkClusterStatsPerCluster(b *testing.B) {
	const clusters = 1000
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("cluster.service-%05d.", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		store := stats.NewStore()
		for _, name := range names {
			scope := store.Scope(name)
			upstream.NewClusterStats(scope)
			newResources(scope, name, [numPriorities]Thresholds{}, [numPriorities]perHostLimit{}, nil, time.Now)
			lb.NewStats(scope, false)
			var e extraStats
			e.init(scope, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/clusters, "ns/cluster")
	b.ReportMetric(0, "ns/op")
}
