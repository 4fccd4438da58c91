package main

import (
	"fmt"
	"regexp"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

// rdsSuccess is the route configuration's update_success counter.
const rdsSuccess = "http.ingress.rds.routes.update_success"

// rds measures a listener's route configuration growing from one virtual
// host to b.n+1, then one of them re-pointed, each until the route
// configuration's update_success counts it.
func (b bench) rds() error {
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	l, err := rdsListener(port)
	if err != nil {
		return err
	}
	cfg := config{
		listeners: []*listenerv3.Listener{l},
		clusters:  []*clusterv3.Cluster{edsCluster("svc", time.Second), edsCluster("other", time.Second)},
		endpoints: []*endpointv3.ClusterLoadAssignment{
			loadAssignment("svc", manyAddresses(1, 0, 8080)...), loadAssignment("other", manyAddresses(1, 1, 8080)...),
		},
		routes: []*routev3.RouteConfiguration{routeTable(0, "svc", "other")},
	}
	cp, s, err := b.start(cfg)
	if err != nil {
		return err
	}
	defer cp.stop()
	defer s.stop()
	var fullCPU, oneCPU cpuTotal
	// apply makes rc the route configuration and returns how long until
	// update_success counted it, and until the server had sent it; the
	// sidecar's CPU time meanwhile goes to cpu.
	apply := func(rc *routev3.RouteConfiguration, cpu *cpuTotal) (visible, sent time.Duration, err error) {
		before, err := s.stat(rdsSuccess)
		if err != nil {
			return 0, 0, err
		}
		cfg.routes = []*routev3.RouteConfiguration{rc}
		cfg.bump(resourcev3.RouteType)
		var t0, done time.Time
		err = cpu.measure(s, func() error {
			t0 = time.Now()
			if err := cp.set(cfg); err != nil {
				return err
			}
			done, err = waitFor(30*time.Second, time.Millisecond, func() (bool, error) {
				cpu.polls++
				v, err := s.stat(rdsSuccess)
				return v > before, err
			})
			return err
		})
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", rdsSuccess, err)
		}
		return done.Sub(t0), cp.sentAt(resourcev3.RouteType).Sub(t0), nil
	}
	var full, fullSent, one, oneSent sample
	err = s.cpuProfiled(b.profile, "rds", func() error {
		for rep := range b.reps {
			big := routeTable(b.n, "svc", "other")
			v, snt, err := apply(big, &fullCPU)
			if err != nil {
				return err
			}
			full, fullSent = append(full, v), append(fullSent, snt)
			changed := routeTable(b.n, "svc", "other")
			changed.VirtualHosts[b.n/2] = virtualHost(changed.VirtualHosts[b.n/2].GetName(), changed.VirtualHosts[b.n/2].GetDomains()[0], "svc")
			v, snt, err = apply(changed, &oneCPU)
			if err != nil {
				return err
			}
			one, oneSent = append(one, v), append(oneSent, snt)
			if _, _, err := apply(routeTable(0, "svc", "other"), &cpuTotal{}); err != nil {
				return err
			}
			fmt.Printf("  rds run %d: 1 -> %d virtual hosts %s, one re-pointed %s (load %s)\n",
				rep+1, b.n+1, round(full[len(full)-1]), round(one[len(one)-1]), loadAverage())
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("rds: 1 -> %d virtual hosts, snapshot set to update_success: %s\n", b.n+1, full)
	fmt.Printf("rds:   the server had sent it after %s; the sidecar's CPU time %s\n", fullSent, fullCPU)
	fmt.Printf("rds: one virtual host of the %d re-pointed: %s\n", b.n+1, one)
	fmt.Printf("rds:   the server had sent it after %s; the sidecar's CPU time %s\n", oneSent, oneCPU)
	poll, err := s.pollCost("^"+regexp.QuoteMeta(rdsSuccess)+"$", 200)
	if err != nil {
		return err
	}
	fmt.Printf("rds: the sidecar's CPU time less the polls (%s each): full %s; one host %s\n", round(poll), fullCPU.lessPolls(poll), oneCPU.lessPolls(poll))
	return nil
}
