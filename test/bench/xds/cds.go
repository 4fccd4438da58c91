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
// CDS's update_success), the sidecar's CPU time meanwhile, and the live
// heap they add, per cluster.
func (b bench) cds() error {
	var (
		active, accepted, serverSent, cpu, polls, cold, coldCPU, one sample
		oneCPU                                                       cpuTotal
		perCluster                                                   []float64
	)
	for rep := range b.reps {
		r, err := b.cdsOnce()
		if err != nil {
			return fmt.Errorf("run %d: %w", rep+1, err)
		}
		active, accepted, serverSent = append(active, r.active), append(accepted, r.accepted), append(serverSent, r.sent)
		cpu, polls = append(cpu, r.cpu), append(polls, r.pollCPU)
		perCluster = append(perCluster, r.perCluster)
		one = append(one, r.one...)
		oneCPU.used += r.oneCPU.used
		oneCPU.updates += r.oneCPU.updates
		c, ccpu, err := b.cdsCold()
		if err != nil {
			return fmt.Errorf("run %d, from start: %w", rep+1, err)
		}
		cold, coldCPU = append(cold, c), append(coldCPU, ccpu)
		fmt.Printf("  cds run %d: all active %s, CDS accepted %s, server sent CDS %s, sidecar CPU %s (of which about %s in the admin polls); heap %.0f bytes per cluster; from start to /ready %s (load %s)\n",
			rep+1, round(r.active), round(r.accepted), round(r.sent), r.cpu, round(r.pollCPU), r.perCluster, round(c), loadAverage())
	}
	fmt.Printf("cds: %d EDS clusters of one endpoint, snapshot set to all active: %s\n", b.n, active)
	fmt.Printf("cds:   to cluster_manager.cds.update_success: %s; the server had sent CDS after %s\n", accepted, serverSent)
	fmt.Printf("cds:   the sidecar's CPU time meanwhile: %s, of which the admin polls (every 20 ms, then every 5%% of the time waited) about %s\n", cpu, polls)
	fmt.Printf("cds: one cluster of the %d changed, snapshot set to cluster_modified: %s; the sidecar's CPU time %s\n", b.n, one, oneCPU)
	fmt.Printf("cds: a sidecar whose first CDS response holds them, from its start to /ready: %s\n", cold)
	fmt.Printf("cds:   its CPU time by then (start-up and the /ready polls included): %s\n", coldCPU)
	fmt.Printf("cds: live heap per cluster (after a collection, less the heap before): %s\n", bytesSample(perCluster))
	return nil
}

// cdsPoll is what the cds measurement polls.
const cdsPoll = `^cluster_manager\.(active_clusters|warming_clusters|cds\.update_success)$`

// cdsResult is one run's figures.
type cdsResult struct {
	active, accepted, sent time.Duration
	// cpu is the sidecar's CPU time from the snapshot to all active;
	// pollCPU is what the admin polls meanwhile cost, estimated after.
	cpu, pollCPU time.Duration
	perCluster   float64
	// one are the times to apply a change of one cluster among them,
	// oneCPU the sidecar's CPU time for those.
	one    sample
	oneCPU cpuTotal
}

func (b bench) cdsOnce() (cdsResult, error) {
	var r cdsResult
	cp, s, err := b.start(config{})
	if err != nil {
		return r, err
	}
	defer cp.stop()
	defer s.stop()
	base, err := s.stats(`^cluster_manager\.(active_clusters|cds\.update_success)$`)
	if err != nil {
		return r, err
	}
	baseActive, _ := strconv.Atoi(base["cluster_manager.active_clusters"])
	baseSuccess, _ := strconv.Atoi(base["cluster_manager.cds.update_success"])
	heap0, size0, err := s.liveHeap()
	if err != nil {
		return r, err
	}

	cfg := b.cdsConfig()

	var (
		t0, tAccepted, done time.Time
		polls               int
		used                cpuTotal
	)
	err = s.cpuProfiled(b.profile, "cds", func() error {
		return used.measure(s, func() error {
			t0 = time.Now()
			if err := cp.set(cfg); err != nil {
				return err
			}
			var err error
			done, err = waitScaled(120*time.Second, 20*time.Millisecond, 0.05, func() (bool, error) {
				polls++
				m, err := s.stats(cdsPoll)
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
			return err
		})
	})
	if err != nil {
		return r, fmt.Errorf("clusters active: %w", err)
	}
	if tAccepted.IsZero() {
		tAccepted = done
	}
	r.active, r.accepted, r.sent, r.cpu = done.Sub(t0), tAccepted.Sub(t0), cp.sentAt(resourcev3.ClusterType).Sub(t0), used.used
	// Let anything the update left behind settle before the collection.
	time.Sleep(time.Second)
	heap1, size1, err := s.liveHeap()
	if err != nil {
		return r, err
	}
	r.perCluster = (float64(heap1) - float64(heap0)) / float64(b.n)
	fmt.Printf("  cds: /memory after a collection: allocated %.1f MiB before, %.1f MiB after; heap_size %.1f MiB before, %.1f MiB after (%.0f bytes per cluster)\n",
		mib(heap0), mib(heap1), mib(size0), mib(size1), (float64(size1)-float64(size0))/float64(b.n))
	if b.profile != "" {
		if err := s.keepProfile(filepath.Join(b.profile, "cds.heap.pprof")); err != nil {
			return r, err
		}
	}
	if code, body, err := s.do(http.MethodGet, "/stats?filter="+url.QueryEscape(`^cluster\.c0\.`)); err == nil && code == http.StatusOK {
		fmt.Printf("  cds: %d stats per cluster (cluster.c0.*)\n", strings.Count(body, "\n"))
	}
	// What the polls cost, now that the stats they walk are all there.
	per, err := s.pollCost(cdsPoll, 50)
	if err != nil {
		return r, err
	}
	r.pollCPU = per * time.Duration(polls)

	// One cluster of the b.n changed, three times: until
	// cluster_manager.cluster_modified counts it.
	err = s.cpuProfiled(b.profile, "cds-one", func() error {
		for i := range 3 {
			before, err := s.stat("cluster_manager.cluster_modified")
			if err != nil {
				return err
			}
			cfg.clusters[0] = edsCluster("c0", time.Duration(2+i)*time.Second)
			cfg.bump(resourcev3.ClusterType)
			var t0, done time.Time
			if err := r.oneCPU.measure(s, func() error {
				t0 = time.Now()
				if err := cp.set(cfg); err != nil {
					return err
				}
				var err error
				done, err = waitScaled(60*time.Second, 2*time.Millisecond, 0.05, func() (bool, error) {
					v, err := s.stat("cluster_manager.cluster_modified")
					return v > before, err
				})
				return err
			}); err != nil {
				return fmt.Errorf("one cluster changed: %w", err)
			}
			r.one = append(r.one, done.Sub(t0))
		}
		return nil
	})
	return r, err
}

// mib is n bytes in MiB.
func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// cdsConfig is b.n EDS clusters c<i> and their load assignments of one
// endpoint each.
func (b bench) cdsConfig() config {
	cfg := config{clusters: make([]*clusterv3.Cluster, b.n), endpoints: make([]*endpointv3.ClusterLoadAssignment, b.n)}
	addrs := manyAddresses(b.n, 0, 8080)
	for i := range b.n {
		name := "c" + strconv.Itoa(i)
		cfg.clusters[i] = edsCluster(name, time.Second)
		cfg.endpoints[i] = loadAssignment(name, addrs[i])
	}
	cfg.bump(resourcev3.ClusterType)
	cfg.bump(resourcev3.EndpointType)
	return cfg
}

// cdsCold starts a sidecar whose first CDS response holds the b.n
// clusters: the time from its start to /ready, which the init manager
// holds back until CDS and every cluster's EDS have arrived, and the CPU
// time the sidecar had used by then (its start-up included).
func (b bench) cdsCold() (ready, cpu time.Duration, err error) {
	t0 := time.Now()
	cp, s, err := b.start(b.cdsConfig())
	if err != nil {
		return 0, 0, err
	}
	ready = time.Since(t0)
	defer cp.stop()
	defer s.stop()
	if cpu, err = s.cpuTime(); err != nil {
		return 0, 0, err
	}
	active, err := s.stat("cluster_manager.active_clusters")
	if err != nil {
		return 0, 0, err
	}
	if active != b.n+1 {
		return 0, 0, fmt.Errorf("ready with %d active clusters, want %d", active, b.n+1)
	}
	return ready, cpu, nil
}

// bytesSample is the median of per-cluster byte counts with their spread.
func bytesSample(v []float64) string {
	c := slices.Clone(v)
	slices.Sort(c)
	med := c[len(c)/2]
	return fmt.Sprintf("median %.0f bytes = %.2f KiB (min %.0f, max %.0f, %d runs)", med, med/1024, c[0], c[len(c)-1], len(c))
}
