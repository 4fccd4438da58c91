package main

import (
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// eds measures one EDS cluster's load assignment growing from one endpoint
// to b.n, then changing by one endpoint (one added, then that one
// removed), each until cluster.big.membership_total shows it.
func (b bench) eds() error {
	cfg := config{
		clusters:  []*clusterv3.Cluster{edsCluster("big", time.Second)},
		endpoints: []*endpointv3.ClusterLoadAssignment{loadAssignment("big", manyAddresses(1, 0, 8080)...)},
	}
	cp, s, err := b.start(cfg)
	if err != nil {
		return err
	}
	defer cp.stop()
	defer s.stop()
	all := manyAddresses(b.n+1, 0, 8080)
	var fullCPU, oneCPU cpuTotal
	// apply sets the assignment to the first count addresses and returns
	// how long until membership_total showed it, and until the server had
	// sent it; the sidecar's CPU time meanwhile goes to cpu.
	apply := func(count int, cpu *cpuTotal) (visible, sent time.Duration, err error) {
		cfg.endpoints = []*endpointv3.ClusterLoadAssignment{loadAssignment("big", all[:count]...)}
		cfg.bump(resourcev3.EndpointType)
		var t0, done time.Time
		err = cpu.measure(s, func() error {
			t0 = time.Now()
			if err := cp.set(cfg); err != nil {
				return err
			}
			done, err = waitFor(30*time.Second, time.Millisecond, func() (bool, error) {
				cpu.polls++
				v, err := s.stat("cluster.big.membership_total")
				return v == count, err
			})
			return err
		})
		if err != nil {
			return 0, 0, fmt.Errorf("membership_total %d: %w", count, err)
		}
		return done.Sub(t0), cp.sentAt(resourcev3.EndpointType).Sub(t0), nil
	}
	var full, fullSent, one, oneSent sample
	// With -profile, each run's full update and its one-endpoint changes
	// have profiles of their own (eds-full-N, eds-one-N; go tool pprof
	// merges several), the profiler started and stopped outside the
	// measured updates.
	for rep := range b.reps {
		err := s.cpuProfiled(b.profile, fmt.Sprint("eds-full-", rep+1), func() error {
			v, snt, err := apply(b.n, &fullCPU)
			full, fullSent = append(full, v), append(fullSent, snt)
			return err
		})
		if err != nil {
			return err
		}
		err = s.cpuProfiled(b.profile, fmt.Sprint("eds-one-", rep+1), func() error {
			for range b.edsPairs {
				for _, count := range []int{b.n + 1, b.n} {
					v, snt, err := apply(count, &oneCPU)
					if err != nil {
						return err
					}
					one, oneSent = append(one, v), append(oneSent, snt)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if _, _, err := apply(1, &cpuTotal{}); err != nil {
			return err
		}
		fmt.Printf("  eds run %d: 1 -> %d endpoints %s, +1 %s, -1 %s (load %s)\n",
			rep+1, b.n, round(full[len(full)-1]), round(one[len(one)-2]), round(one[len(one)-1]), loadAverage())
	}
	poll, err := s.pollCost(`^cluster\.big\.membership_total$`, 200)
	if err != nil {
		return err
	}
	fmt.Printf("eds: one cluster, 1 -> %d endpoints, snapshot set to membership_total: %s\n", b.n, full)
	fmt.Printf("eds:   the server had sent it after %s; the sidecar's CPU time %s\n", fullSent, fullCPU)
	fmt.Printf("eds: one endpoint added to or removed from the %d: %s\n", b.n, one)
	fmt.Printf("eds:   the server had sent it after %s; the sidecar's CPU time %s\n", oneSent, oneCPU)
	fmt.Printf("eds: (the CPU times include the admin polls, every 1 ms, %s of CPU each)\n", round(poll))
	fmt.Printf("eds: the sidecar's CPU time less the polls: 1 -> %d %s; one endpoint %s\n", b.n, fullCPU.lessPolls(poll), oneCPU.lessPolls(poll))
	return nil
}
