// Command dnsrefresh measures what refreshing a large STRICT_DNS cluster
// costs the requests going through the sidecar. A DNS server in this
// program answers the cluster's name with 1,000 addresses (over TCP, the
// answer being too large for UDP), each a loopback address with its own
// upstream listener, in a new order each time, so that every refresh
// compares the whole list; -churn also swaps that fraction of them for
// spare addresses at each answer, so that refreshes change the host set
// (and the requests then also pay for connections to new hosts).
// Two sidecars are measured in turns under the same closed-loop load: one
// refreshing every second (dns_refresh_rate: 1s) and a control that
// resolves once (an hour). It prints the request latency percentiles of
// each, medians of the repetitions, and the refreshes the refreshing one
// made. Everything runs on 127.0.0.0/8; every run is bounded in time; only
// the processes it starts are stopped.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/outrigger-dev/outrigger/test/bench/benchkit"
)

func main() {
	var (
		sidecar = flag.String("sidecar", "bin/sidecar", "the sidecar binary")
		dur     = flag.Duration("dur", 10*time.Second, "measured time per run")
		reps    = flag.Int("reps", 3, "repetitions (the median of each percentile is reported)")
		conns   = flag.Int("conns", 8, "client connections (closed loop)")
		answers = flag.Int("answers", 1000, "addresses in each DNS answer")
		churn   = flag.Float64("churn", 0, "fraction of the answer swapped for other addresses at each query (0 to 1)")
	)
	flag.Parse()
	if *churn < 0 || *churn > 1 || *answers < 1 {
		fmt.Fprintln(os.Stderr, "dnsrefresh bench: -churn must be within [0, 1] and -answers at least 1")
		os.Exit(1)
	}
	if err := run(*sidecar, *dur, *reps, *conns, *answers, *churn); err != nil {
		fmt.Fprintln(os.Stderr, "dnsrefresh bench:", err)
		os.Exit(1)
	}
}

// name is the cluster's DNS name.
const name = "svc.bench."

func run(sidecar string, dur time.Duration, reps, conns, answers int, churn float64) error {
	// The answers' addresses and the spare ones, all in 127.1.0.0/16.
	spare := int(churn * float64(answers))
	pool := make([]string, answers+spare)
	for i := range pool {
		pool[i] = fmt.Sprintf("127.1.%d.%d", 1+i/250, 1+i%250)
	}
	port, stopUp, err := startUpstreams(pool)
	if err != nil {
		return err
	}
	defer stopUp()
	srv, dnsPort, err := startDNS(pool, answers, spare)
	if err != nil {
		return err
	}
	defer srv.stop()

	cases := []struct {
		label, refresh string
	}{{"control (resolved once)", "3600s"}, {"refreshing every 1 s", "1s"}}
	results := make([][]stats, len(cases))
	for r := 0; r < reps; r++ {
		for i, c := range cases {
			s, err := measure(sidecar, c.refresh, dnsPort, port, answers, dur, conns)
			if err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			fmt.Printf("round %d %-24s %s\n", r+1, c.label, s)
			results[i] = append(results[i], s)
		}
	}
	fmt.Printf("\nmedians of %d rounds of %s, %d connections, %d answers per query, %d swapped each time (DNS answers served: %d)\n",
		reps, dur, conns, answers, spare, srv.queries())
	for i, c := range cases {
		fmt.Printf("%-24s %s\n", c.label, median(results[i]))
	}
	return nil
}

// stats are one run's figures.
type stats struct {
	requests       int
	p50, p99, p999 time.Duration
	// refreshes are the successful resolutions during the run, rebuilds
	// those that changed the host set, connections the upstream
	// connections opened.
	refreshes, rebuilds, connections int
}

func (s stats) String() string {
	return fmt.Sprintf("requests %7d  p50 %7.1f µs  p99 %7.1f µs  p99.9 %7.1f µs  refreshes %d (host set changed %d)  upstream connections %d",
		s.requests, us(s.p50), us(s.p99), us(s.p999), s.refreshes, s.rebuilds, s.connections)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(runs []stats) stats {
	return stats{
		requests:    medianOf(runs, func(s stats) int { return s.requests }),
		p50:         medianOf(runs, func(s stats) time.Duration { return s.p50 }),
		p99:         medianOf(runs, func(s stats) time.Duration { return s.p99 }),
		p999:        medianOf(runs, func(s stats) time.Duration { return s.p999 }),
		refreshes:   medianOf(runs, func(s stats) int { return s.refreshes }),
		rebuilds:    medianOf(runs, func(s stats) int { return s.rebuilds }),
		connections: medianOf(runs, func(s stats) int { return s.connections }),
	}
}

// medianOf is the median of one figure of the runs.
func medianOf[T cmp.Ordered](runs []stats, f func(stats) T) T {
	v := make([]T, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// startUpstreams listens on port p of every address (the same port, found
// free on the first address) and answers every request with "ok".
func startUpstreams(addrs []string) (int, func(), error) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	var lns []net.Listener
	stop := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	for attempt := 0; attempt < 20; attempt++ {
		first, err := net.Listen("tcp", addrs[0]+":0")
		if err != nil {
			return 0, nil, err
		}
		port := first.Addr().(*net.TCPAddr).Port
		lns = []net.Listener{first}
		ok := true
		for _, a := range addrs[1:] {
			ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		if !ok {
			stop()
			continue
		}
		for _, ln := range lns {
			go func() { _ = http.Serve(ln, h) }()
		}
		return port, stop, nil
	}
	return 0, nil, errors.New("no port free on every upstream address")
}

// dnsServer answers name with n of the pool's addresses in a new order
// each time, swap of them exchanged for the pool's others.
type dnsServer struct {
	udp, tcp *dns.Server
	mu       sync.Mutex
	pool     []string
	n, swap  int
	served   int
}

func startDNS(pool []string, n, swap int) (*dnsServer, int, error) {
	s := &dnsServer{pool: slices.Clone(pool), n: n, swap: swap}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		_ = pc.Close()
		return nil, 0, err
	}
	s.udp = &dns.Server{PacketConn: pc, Handler: s}
	s.tcp = &dns.Server{Listener: ln, Handler: s}
	go func() { _ = s.udp.ActivateAndServe() }()
	go func() { _ = s.tcp.ActivateAndServe() }()
	return s, port, nil
}

func (s *dnsServer) stop() {
	_ = s.udp.Shutdown()
	_ = s.tcp.Shutdown()
}

func (s *dnsServer) queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// ServeDNS implements dns.Handler. Over UDP an answer this large is sent
// truncated (no records, TC set), so the resolver asks again over TCP, as
// a real server does.
func (s *dnsServer) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if len(q.Question) != 1 || !strings.EqualFold(q.Question[0].Name, name) || q.Question[0].Qtype != dns.TypeA {
		_ = w.WriteMsg(m)
		return
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		m.Truncated = true
		_ = w.WriteMsg(m)
		return
	}
	s.mu.Lock()
	s.served++
	// Swap the first addresses of the answer for the spare ones, then
	// shuffle the answer.
	for i := 0; i < s.swap; i++ {
		s.pool[i], s.pool[s.n+i] = s.pool[s.n+i], s.pool[i]
	}
	addrs := slices.Clone(s.pool[:s.n])
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	copy(s.pool, addrs)
	s.mu.Unlock()
	for _, a := range addrs {
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
			A:   net.ParseIP(a).To4(),
		})
	}
	_ = w.WriteMsg(m)
}

// measure starts a sidecar with the given refresh rate, waits for its
// cluster to hold every answer, loads it for dur and stops it.
func measure(sidecar, refresh string, dnsPort, upPort, answers int, dur time.Duration, conns int) (stats, error) {
	dir, err := os.MkdirTemp("", "dnsrefresh")
	if err != nil {
		return stats{}, err
	}
	defer os.RemoveAll(dir)
	admin, listen, err := twoPorts()
	if err != nil {
		return stats{}, err
	}
	cfg := bootstrap(admin, listen, dnsPort, upPort, refresh)
	path := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return stats{}, err
	}
	cmd := exec.Command(sidecar, "-c", path, "--concurrency", "1", "--log-level", "error", "--disable-hot-restart")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return stats{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	adminURL := fmt.Sprintf("http://127.0.0.1:%d", admin)
	if err := waitHosts(adminURL, answers, 30*time.Second); err != nil {
		return stats{}, err
	}
	counted := []string{"cluster.svc.update_success", "cluster.svc.membership_change", "cluster.svc.upstream_cx_total"}
	before, err := counters(adminURL, counted)
	if err != nil {
		return stats{}, err
	}
	lat, err := load(fmt.Sprintf("http://127.0.0.1:%d/", listen), conns, dur)
	if err != nil {
		return stats{}, err
	}
	after, err := counters(adminURL, counted)
	if err != nil {
		return stats{}, err
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	return stats{
		requests: len(lat), p50: q(0.50), p99: q(0.99), p999: q(0.999),
		refreshes: after[0] - before[0], rebuilds: after[1] - before[1], connections: after[2] - before[2],
	}, nil
}

func bootstrap(admin, listen, dnsPort, upPort int, refresh string) string {
	return fmt.Sprintf(`admin:
  address: {socket_address: {address: 127.0.0.1, port_value: %d}}
static_resources:
  listeners:
  - name: in
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: in
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /}
                route: {cluster: svc}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: svc
    type: STRICT_DNS
    dns_refresh_rate: %s
    respect_dns_ttl: false
    dns_lookup_family: V4_ONLY
    typed_dns_resolver_config:
      name: envoy.network.dns_resolver.cares
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig
        resolvers: [{socket_address: {address: 127.0.0.1, port_value: %d}}]
        dns_resolver_options: {no_default_search_domain: true}
    load_assignment:
      cluster_name: svc
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: %s, port_value: %d}}}
`, admin, listen, refresh, dnsPort, strings.TrimSuffix(name, "."), upPort)
}

// twoPorts returns two free loopback ports.
func twoPorts() (int, int, error) {
	var ports []int
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports[0], ports[1], nil
}

// waitHosts waits until the cluster holds n hosts (from the membership
// gauge) and the server is LIVE.
func waitHosts(adminURL string, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if v, err := benchkit.Counter(adminURL, "cluster.svc.membership_total"); err == nil && v == n {
			if r, err := http.Get(adminURL + "/ready"); err == nil {
				r.Body.Close()
				if r.StatusCode == 200 {
					return nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the cluster did not reach %d hosts in %s", n, limit)
}

// counters reads several stats.
func counters(adminURL string, names []string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		v, err := benchkit.Counter(adminURL, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// load runs conns keep-alive clients in a closed loop for dur and returns
// every request's latency.
func load(url string, conns int, dur time.Duration) ([]time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	stop := time.Now().Add(dur)
	var (
		mu    sync.Mutex
		all   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				r, err := client.Get(url)
				if err == nil {
					_, err = io.Copy(io.Discard, r.Body)
					r.Body.Close()
					if err == nil && r.StatusCode != 200 {
						err = fmt.Errorf("status %d", r.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if len(all) == 0 {
		return nil, errors.New("no request completed")
	}
	return all, nil
}
