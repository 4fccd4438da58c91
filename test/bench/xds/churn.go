package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

// idle is how many clusters and virtual hosts the churn keeps beside the
// loaded path, for the updates that do not touch it.
const idle = 10

// churn sends steady keep-alive load through the listener while b.updates
// updates arrive, in turn: a cluster not on the loaded path changed (CDS),
// its endpoints changed (EDS), a virtual host not on the loaded path
// re-pointed (RDS), the endpoints of the equivalent cluster not loaded
// changed (EDS), and the loaded route re-pointed to that cluster (RDS).
// Any failed request fails the measurement.
func (b bench) churn() error {
	var (
		upstreams [2]int
		served    [2]atomic.Int64
	)
	for i := range upstreams {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			served[i].Add(1)
			_, _ = io.WriteString(w, "ok")
		})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		upstreams[i] = ln.Addr().(*net.TCPAddr).Port
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	l, err := rdsListener(port)
	if err != nil {
		return err
	}
	// loaded and spare are the two equivalent clusters the route
	// alternates between; at is the upstream each points to.
	loaded, spare := "svc", "alt"
	at := map[string]int{"svc": 0, "alt": 1}
	idleTimeout := make([]time.Duration, idle)
	idleSkip := make([]int, idle)
	idleRoute := make([]int, idle)
	build := func(cfg *config) {
		cfg.clusters = []*clusterv3.Cluster{edsCluster(loaded, time.Second), edsCluster(spare, time.Second)}
		cfg.endpoints = []*endpointv3.ClusterLoadAssignment{
			loadAssignment(loaded, socketAddress("127.0.0.1", upstreams[at[loaded]])),
			loadAssignment(spare, socketAddress("127.0.0.1", upstreams[at[spare]])),
		}
		rc := &routev3.RouteConfiguration{Name: "routes"}
		for i := range idle {
			name := "x" + strconv.Itoa(i)
			cfg.clusters = append(cfg.clusters, edsCluster(name, time.Second+idleTimeout[i]))
			// Never connected to: nothing routes a request there.
			cfg.endpoints = append(cfg.endpoints, loadAssignment(name, manyAddresses(1, 1000+i*idle+idleSkip[i], 9)...))
			rc.VirtualHosts = append(rc.VirtualHosts, virtualHost("h"+strconv.Itoa(i), "h"+strconv.Itoa(i)+".example.com", "x"+strconv.Itoa(idleRoute[i])))
		}
		rc.VirtualHosts = append(rc.VirtualHosts, virtualHost("all", "*", loaded))
		cfg.routes = []*routev3.RouteConfiguration{rc}
	}
	cfg := config{listeners: []*listenerv3.Listener{l}}
	build(&cfg)
	cp, s, err := b.start(cfg)
	if err != nil {
		return err
	}
	defer cp.stop()
	defer s.stop()

	ld := startLoad(fmt.Sprintf("http://127.0.0.1:%d/", port), 4, 2*time.Minute)
	began := time.Now()
	time.Sleep(500 * time.Millisecond)
	kinds := map[string]int{}
	for i := range b.updates {
		k := i % idle
		var (
			typeURL resourcev3.Type
			counter string
			kind    string
		)
		switch i % 5 {
		case 0:
			idleTimeout[k] = time.Duration(i%3) * time.Second
			typeURL, counter, kind = resourcev3.ClusterType, "cluster_manager.cds.update_success", "CDS: an idle cluster changed"
		case 1:
			idleSkip[k] = (idleSkip[k] + 1) % idle
			typeURL, counter, kind = resourcev3.EndpointType, "cluster.x"+strconv.Itoa(k)+".update_success", "EDS: an idle cluster's endpoint changed"
		case 2:
			idleRoute[k] = (idleRoute[k] + 1) % idle
			typeURL, counter, kind = resourcev3.RouteType, rdsSuccess, "RDS: an idle virtual host re-pointed"
		case 3:
			at[spare] = 1 - at[spare]
			typeURL, counter, kind = resourcev3.EndpointType, "cluster."+spare+".update_success", "EDS: the spare cluster's endpoint changed"
		case 4:
			loaded, spare = spare, loaded
			typeURL, counter, kind = resourcev3.RouteType, rdsSuccess, "RDS: the loaded route re-pointed to the equivalent cluster"
		}
		before, err := s.stat(counter)
		if err != nil {
			return err
		}
		build(&cfg)
		cfg.bump(typeURL)
		if err := cp.set(cfg); err != nil {
			return err
		}
		if _, err := waitFor(30*time.Second, 2*time.Millisecond, func() (bool, error) {
			v, err := s.stat(counter)
			return v > before, err
		}); err != nil {
			return fmt.Errorf("update %d (%s): %s: %w", i+1, kind, counter, err)
		}
		kinds[kind]++
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	res := ld.stop()
	elapsed := time.Since(began)
	fmt.Printf("churn: %d updates under load (", b.updates)
	first := true
	for k, n := range kinds {
		if !first {
			fmt.Print("; ")
		}
		first = false
		fmt.Printf("%d %s", n, k)
	}
	fmt.Printf(")\nchurn: %d requests on 4 keep-alive connections in %s (%.0f/s), failed: %d; served by upstream 1: %d, 2: %d (load %s)\n",
		res.ok+res.failed, elapsed.Round(10*time.Millisecond), float64(res.ok)/elapsed.Seconds(), res.failed, served[0].Load(), served[1].Load(), loadAverage())
	for i, e := range res.errors {
		if i == 5 {
			break
		}
		fmt.Println("  error:", e)
	}
	if res.failed > 0 {
		return errors.New("requests failed while the configuration changed")
	}
	if res.ok == 0 {
		return errors.New("no request was answered")
	}
	return nil
}

// loadResult counts the answers: ok are 200 "ok"; failed are any other
// answer or a connection error.
type loadResult struct {
	ok, failed int
	errors     []string
}

// load is a bounded set of keep-alive clients sending GETs until stopped.
type load struct {
	mu   sync.Mutex
	res  loadResult
	done chan struct{}
	wg   sync.WaitGroup
}

// startLoad starts clients keep-alive clients against url, each pausing a
// millisecond between requests and stopping at bound at the latest.
func startLoad(url string, clients int, bound time.Duration) *load {
	l := &load{done: make(chan struct{})}
	deadline := time.Now().Add(bound)
	for range clients {
		l.wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for time.Now().Before(deadline) {
				select {
				case <-l.done:
					return
				default:
				}
				err := getOK(c, url)
				l.mu.Lock()
				if err == nil {
					l.res.ok++
				} else {
					l.res.failed++
					l.res.errors = append(l.res.errors, err.Error())
				}
				l.mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	return l
}

// getOK GETs url and wants 200 "ok".
func getOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("%d %q", resp.StatusCode, body)
	}
	return nil
}

// stop ends the load and returns its counts.
func (l *load) stop() loadResult {
	close(l.done)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res
}
