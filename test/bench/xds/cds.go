package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// cds measures b.n EDS clusters of one endpoint each arriving at a running
// sidecar that has none: the time until all are active (and, apart, until
// CDS's update_success), and the live heap they add, per cluster.
func (b bench) cds() error {
	var (
		active, accepted, serverSent, cpu sample
		perCluster                        []float64
	)
	for rep := range b.reps {
		act, acc, sent, used, heap, err := b.cdsOnce()
		if err != nil {
			return fmt.Errorf("run %d: %w", rep+1, err)
		}
		active, accepted, serverSent, cpu = append(active, act), append(accepted, acc), append(serverSent, sent), append(cpu, used)
		perCluster = append(perCluster, heap)
		fmt.Printf("  cds run %d: all active %s, CDS accepted %s, server sent CDS %s, sidecar CPU %s; heap %.0f bytes per cluster (load %s)\n",
			rep+1, round(act), round(acc), round(sent), used, heap, loadAverage())
	}
	fmt.Printf("cds: %d EDS clusters of one endpoint, snapshot set to all active: %s\n", b.n, active)
	fmt.Printf("cds:   to cluster_manager.cds.update_success: %s; the server had sent CDS after %s\n", accepted, serverSent)
	fmt.Printf("cds:   the sidecar's CPU time meanwhile (admin polls every 20 ms included): %s\n", cpu)
	fmt.Printf("cds: live heap per cluster (after a collection, less the heap before): %s\n", bytesSample(perCluster))
	return nil
}

func (b bench) cdsOnce() (active, accepted, sent, cpu time.Duration, perCluster float64, err error) {
	cp, s, err := b.start(config{})
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	defer cp.stop()
	defer s.stop()
	base, err := s.stats(`^cluster_manager\.(active_clusters|cds\.update_success)$`)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	baseActive, _ := strconv.Atoi(base["cluster_manager.active_clusters"])
	baseSuccess, _ := strconv.Atoi(base["cluster_manager.cds.update_success"])
	heap0, err := s.liveHeap()
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}

	cfg := config{clusters: make([]*clusterv3.Cluster, b.n), endpoints: make([]*endpointv3.ClusterLoadAssignment, b.n)}
	addrs := manyAddresses(b.n, 0, 8080)
	for i := range b.n {
		name := "c" + strconv.Itoa(i)
		cfg.clusters[i] = edsCluster(name, time.Second)
		cfg.endpoints[i] = loadAssignment(name, addrs[i])
	}
	cfg.bump(resourcev3.ClusterType)
	cfg.bump(resourcev3.EndpointType)

	if b.profile != "" {
		if err := s.profiler("cpu", true); err != nil {
			return 0, 0, 0, 0, 0, err
		}
	}
	cpu0, err := s.cpuTime()
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	t0 := time.Now()
	if err := cp.set(cfg); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	var tAccepted time.Time
	done, err := waitFor(120*time.Second, 20*time.Millisecond, func() (bool, error) {
		m, err := s.stats(`^cluster_manager\.(active_clusters|warming_clusters|cds\.update_success)$`)
		if err != nil {
			return false, err
		}
		if ok, _ := strconv.Atoi(m["cluster_manager.cds.update_success"]); ok > baseSuccess && tAccepted.IsZero() {
			tAccepted = time.Now()
		}
		act, _ := strconv.Atoi(m["cluster_manager.active_clusters"])
		warming, _ := strconv.Atoi(m["cluster_manager.warming_clusters"])
		return act == baseActive+b.n && warming == 0, nil
	})
	if err != nil {
		return 0, 0, 0, 0, 0, fmt.Errorf("clusters active: %w", err)
	}
	cpu1, err := s.cpuTime()
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	sentAt := cp.sentAt(resourcev3.ClusterType)
	if b.profile != "" {
		if err := s.profiler("cpu", false); err != nil {
			return 0, 0, 0, 0, 0, err
		}
		if err := s.keepProfile(filepath.Join(b.profile, "cds.cpu.pprof")); err != nil {
			return 0, 0, 0, 0, 0, err
		}
	}
	if tAccepted.IsZero() {
		tAccepted = done
	}
	// Let anything the update left behind settle before the collection.
	time.Sleep(time.Second)
	heap1, err := s.liveHeap()
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	fmt.Printf("  cds: live heap %.1f MiB before, %.1f MiB after\n", float64(heap0)/(1<<20), float64(heap1)/(1<<20))
	if code, body, err := s.do(http.MethodGet, "/stats?filter="+url.QueryEscape(`^cluster\.c0\.`)); err == nil && code == http.StatusOK {
		fmt.Printf("  cds: %d stats per cluster (cluster.c0.*)\n", strings.Count(body, "\n"))
	}
	if b.profile != "" {
		if err := s.keepProfile(filepath.Join(b.profile, "cds.heap.pprof")); err != nil {
			return 0, 0, 0, 0, 0, err
		}
	}
	return done.Sub(t0), tAccepted.Sub(t0), sentAt.Sub(t0), cpu1 - cpu0, (float64(heap1) - float64(heap0)) / float64(b.n), nil
}

// bytesSample is the median of per-cluster byte counts with their spread.
func bytesSample(v []float64) string {
	c := slices.Clone(v)
	slices.Sort(c)
	med := c[len(c)/2]
	return fmt.Sprintf("median %.0f bytes = %.2f KiB (min %.0f, max %.0f, %d runs)", med, med/1024, c[0], c[len(c)-1], len(c))
}
