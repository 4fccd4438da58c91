package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mdns "github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// dnsServer is a DNS server on 127.0.0.1 (UDP and TCP on one port) that
// the spec programs: names and their A records, or no answer at all.
type dnsServer struct {
	port    int
	silent  atomic.Bool // drop every query: the sidecar's attempts time out
	queries atomic.Int64
	// tcpQueries counts the queries that came over TCP.
	tcpQueries atomic.Int64

	mu      sync.Mutex
	records map[string][]string // lower-case FQDN -> IPv4 addresses
	servers []*mdns.Server
}

// startDNSServer serves until the spec ends (or Stop).
func startDNSServer() *dnsServer {
	GinkgoHelper()
	d := &dnsServer{records: map[string][]string{}}
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 20 {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		_ = pc.Close()
	}
	Expect(err).NotTo(HaveOccurred(), "no port free for UDP and TCP at once")
	d.port = pc.LocalAddr().(*net.UDPAddr).Port
	h := mdns.HandlerFunc(d.serve)
	d.servers = []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}}
	for _, s := range d.servers {
		go func() { _ = s.ActivateAndServe() }()
	}
	DeferCleanup(d.Stop)
	return d
}

// set makes name answer with the given IPv4 addresses (none: NODATA).
func (d *dnsServer) set(name string, ips ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records[strings.ToLower(mdns.Fqdn(name))] = ips
}

// Stop closes the server: queries are then refused by the kernel.
func (d *dnsServer) Stop() {
	for _, s := range d.servers {
		_ = s.Shutdown()
	}
}

func (d *dnsServer) serve(w mdns.ResponseWriter, r *mdns.Msg) {
	d.queries.Add(1)
	if w.RemoteAddr().Network() == "tcp" {
		d.tcpQueries.Add(1)
	}
	if d.silent.Load() || len(r.Question) != 1 {
		return
	}
	q := r.Question[0]
	m := new(mdns.Msg)
	m.SetReply(r)
	d.mu.Lock()
	ips, ok := d.records[strings.ToLower(q.Name)]
	d.mu.Unlock()
	switch {
	case !ok:
		m.Rcode = mdns.RcodeNameError
	case q.Qtype == mdns.TypeA:
		for _, ip := range ips {
			m.Answer = append(m.Answer, &mdns.A{
				Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 1},
				A:   net.ParseIP(ip),
			})
		}
	}
	_ = w.WriteMsg(m)
}

// namedBackend is an HTTP server answering its name.
type namedBackend struct {
	name, addr string
}

// startBackendPair starts two backends on one port, one on 127.0.0.1 and
// one on 127.0.0.2 (both loopback addresses on Linux), so that one DNS
// name with two A records reaches both.
func startBackendPair() (a, b namedBackend, port int) {
	GinkgoHelper()
	for range 20 {
		l1, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port = l1.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
		if err != nil {
			_ = l1.Close()
			continue
		}
		serveName(l1, "A")
		serveName(l2, "B")
		return namedBackend{"A", l1.Addr().String()}, namedBackend{"B", l2.Addr().String()}, port
	}
	Fail("no port free on both 127.0.0.1 and 127.0.0.2")
	return
}

func serveName(ln net.Listener, name string) {
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, name)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
}

// caresResolver is a typed_dns_resolver_config (YAML flow) pointing at a
// test DNS server; extra adds CaresDnsResolverConfig fields.
func caresResolver(dnsPort int, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{name: envoy.network.dns_resolver.cares, typed_config: {"@type": type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig, resolvers: [{socket_address: {address: 127.0.0.1, port_value: %d}}], dns_resolver_options: {no_default_search_domain: true}%s}}`, dnsPort, extra)
}

// dnsBootstrap is a listener on port routing to the cluster svc, built
// from clusterFields (YAML flow, without the braces, its load_assignment
// included); top adds bootstrap fields (likewise).
func dnsBootstrap(port int, top, clusterFields string) string {
	return proxySpec{
		Port:     port,
		Listener: "{name: front}",
		HCM:      "{stat_prefix: front}",
		Top:      "{" + top + "}",
		Clusters: []proxyCluster{{Name: "svc", Extra: "{" + clusterFields + "}"}},
	}.YAML()
}

// dnsEndpoint is a load_assignment (YAML flow) with one endpoint name:port.
func dnsEndpoint(name string, port int) string {
	return fmt.Sprintf("load_assignment: {cluster_name: svc, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %d}}}}]}]}", name, port)
}

// spread sends n requests through the listener and counts the answers by
// body; a failed request counts under its status code.
func spread(client *http.Client, port, n int) map[string]int {
	GinkgoHelper()
	counts := map[string]int{}
	for range n {
		code, body := getThrough(client, port)
		if code != 200 {
			body = strconv.Itoa(code)
		}
		counts[body]++
	}
	return counts
}

var _ = Describe("DNS clusters", func() {
	It("STRICT_DNS sends traffic to every address, follows the answers and keeps the last good hosts when the DNS fails", func() {
		dns := startDNSServer()
		a, b, backendPort := startBackendPair()
		dns.set("backend.test", "127.0.0.1", "127.0.0.2")
		port := freePort()
		s := Start(newDir(), dnsBootstrap(port, "", fmt.Sprintf(
			"type: STRICT_DNS, dns_refresh_rate: 0.1s, dns_lookup_family: V4_ONLY, typed_dns_resolver_config: %s, %s",
			caresResolver(dns.port, ""), dnsEndpoint("backend.test", backendPort))))
		client := &http.Client{Timeout: 5 * time.Second}

		// LIVE only after the first answer: both hosts take turns at once.
		Expect(spread(client, port, 10)).To(Equal(map[string]int{"A": 5, "B": 5}))
		body := s.Get("/clusters").Body
		Expect(hostLine(body, "svc", a.addr, "hostname")).To(Equal("backend.test"))
		Expect(hostLine(body, "svc", b.addr, "hostname")).To(Equal("backend.test"))
		Expect(hostLine(body, "svc", a.addr, "rq_total")).To(Equal("5"))
		Expect(statValue(s, "cluster.svc.membership_total")).To(Equal("2"))
		Expect(strconv.Atoi(statValue(s, "cluster.svc.update_success"))).To(BeNumerically(">=", 1))
		Expect(strconv.Atoi(statValue(s, "dns.cares.resolve_total"))).To(BeNumerically(">=", 1))
		Expect(statValue(s, "dns.cares.pending_resolutions")).To(MatchRegexp("^[01]$"))

		// The answer changes: traffic follows.
		dns.set("backend.test", "127.0.0.2")
		Eventually(func() string { return hostLine(s.Get("/clusters").Body, "svc", a.addr, "hostname") }, 10*time.Second).
			Should(Equal("<missing>"))
		Expect(spread(client, port, 6)).To(Equal(map[string]int{"B": 6}))
		Expect(statValue(s, "cluster.svc.membership_total")).To(Equal("1"))
		// Later answers are the same: nothing to rebuild.
		Eventually(func() int {
			n, _ := strconv.Atoi(statValue(s, "cluster.svc.update_no_rebuild"))
			return n
		}, 10*time.Second).Should(BeNumerically(">=", 1))

		// The DNS server goes away: resolutions fail, the hosts stay.
		failures, err := strconv.Atoi(statValue(s, "cluster.svc.update_failure"))
		Expect(err).NotTo(HaveOccurred())
		dns.Stop()
		Eventually(func() int {
			n, _ := strconv.Atoi(statValue(s, "cluster.svc.update_failure"))
			return n
		}, 15*time.Second).Should(BeNumerically(">=", failures+2))
		Expect(strconv.Atoi(statValue(s, "dns.cares.get_addr_failure"))).To(BeNumerically(">=", 1))
		Expect(spread(client, port, 6)).To(Equal(map[string]int{"B": 6}))
		Expect(s.Stderr()).To(ContainSubstring("DNS resolution failed; the cluster keeps its hosts"))
		Expect(strings.Count(s.Stderr(), "DNS resolution failed; the cluster keeps its hosts")).To(Equal(1), "logged once")
	})

	It("LOGICAL_DNS connects to the answer's first address and moves when it changes, with the bootstrap's resolver", func() {
		dns := startDNSServer()
		a, b, backendPort := startBackendPair()
		dns.set("svc.test", "127.0.0.1", "127.0.0.2")
		port := freePort()
		s := Start(newDir(), dnsBootstrap(port,
			"typed_dns_resolver_config: "+caresResolver(dns.port, "query_timeout_seconds: 1, query_tries: 2"),
			fmt.Sprintf("type: LOGICAL_DNS, dns_refresh_rate: 0.1s, dns_lookup_family: V4_ONLY, %s", dnsEndpoint("svc.test", backendPort))))
		client := &http.Client{Timeout: 5 * time.Second}
		Expect(spread(client, port, 4)).To(Equal(map[string]int{"A": 4}))
		body := s.Get("/clusters").Body
		Expect(hostLine(body, "svc", a.addr, "hostname")).To(Equal("svc.test"))
		Expect(hostLine(body, "svc", b.addr, "hostname")).To(Equal("<missing>"), "one host only:\n%s", body)

		dns.set("svc.test", "127.0.0.2", "127.0.0.1")
		Eventually(func() string { return hostLine(s.Get("/clusters").Body, "svc", b.addr, "hostname") }, 10*time.Second).
			Should(Equal("svc.test"))
		Expect(spread(client, port, 4)).To(Equal(map[string]int{"B": 4}))
		Expect(statValue(s, "cluster.svc.membership_total")).To(Equal("1"))

		// A name without address is a failure for LOGICAL_DNS: the host stays.
		dns.set("svc.test")
		failures, err := strconv.Atoi(statValue(s, "cluster.svc.update_failure"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int {
			n, _ := strconv.Atoi(statValue(s, "cluster.svc.update_failure"))
			return n
		}, 10*time.Second).Should(BeNumerically(">", failures))
		Expect(strconv.Atoi(statValue(s, "dns.cares.not_found"))).To(BeNumerically(">=", 1))
		Expect(spread(client, port, 2)).To(Equal(map[string]int{"B": 2}))
	})

	It("holds the server in INITIALIZING until the first resolution ends, unless wait_for_warm_on_init is false", func() {
		dns := startDNSServer()
		_, b, backendPort := startBackendPair()
		dns.silent.Store(true)
		dns.set("late.test", "127.0.0.2")
		port := freePort()
		cfg := func(wait string) string {
			return dnsBootstrap(port, "", fmt.Sprintf(
				"type: STRICT_DNS, %s dns_refresh_rate: 0.1s, dns_lookup_family: V4_ONLY, typed_dns_resolver_config: %s, %s",
				wait, caresResolver(dns.port, "query_timeout_seconds: 2, query_tries: 2"), dnsEndpoint("late.test", backendPort)))
		}

		// Waiting (the default): the first resolution times out after 2
		// attempts of 2 s; until then the server is not LIVE.
		s := Launch(newDir(), "bootstrap.yaml", cfg(""))
		s.WaitForAdmin()
		r := s.Get("/ready")
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("INITIALIZING\n"))
		Eventually(s.Stderr, 15*time.Second).Should(ContainSubstring("starting main dispatch loop"))
		Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
		Expect(strconv.Atoi(statValue(s, "dns.cares.timeouts"))).To(BeNumerically(">=", 2))
		code, _ := getThrough(&http.Client{Timeout: 5 * time.Second}, port)
		Expect(code).To(Equal(503), "no host before an answer")
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))

		// Not waiting: LIVE at once, 503 until the DNS answers, then traffic.
		dns.silent.Store(true)
		s = Start(newDir(), cfg("wait_for_warm_on_init: false,"))
		Expect(s.Get("/ready").Body).To(Equal("LIVE\n"))
		client := &http.Client{Timeout: 5 * time.Second}
		code, _ = getThrough(client, port)
		Expect(code).To(Equal(503))
		Expect(strconv.Atoi(statValue(s, "cluster.svc.upstream_cx_none_healthy"))).To(BeNumerically(">=", 1))
		dns.silent.Store(false)
		Eventually(func() string { _, body := getThrough(client, port); return body }, 20*time.Second).Should(Equal(b.name))
	})

	It("--mode validate accepts DNS settings Envoy ignores and refuses unsupported resolver options with their path", func() {
		dir := newDir()
		ok := dnsBootstrap(freePort(), "dns_resolution_config: {resolvers: [{socket_address: {address: 127.0.0.1, port_value: 53}}]}",
			"dns_lookup_family: V4_ONLY, dns_refresh_rate: 1s, respect_dns_ttl: true, "+
				"load_assignment: {cluster_name: svc, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}}]}]}")
		writeFile(dir+"/ok.yaml", ok)
		res := Run("-c", dir+"/ok.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(0), res.Stderr)

		bad := dnsBootstrap(freePort(),
			`typed_dns_resolver_config: {name: apple, typed_config: {"@type": type.googleapis.com/envoy.extensions.network.dns_resolver.apple.v3.AppleDnsResolverConfig}}`,
			"type: STRICT_DNS, typed_dns_resolver_config: "+caresResolver(53, "qcache_max_ttl: 60")+", "+dnsEndpoint("backend.test", 80))
		writeFile(dir+"/bad.yaml", bad)
		res = Run("-c", dir+"/bad.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(`typed_dns_resolver_config.typed_config: unknown type "type.googleapis.com/envoy.extensions.network.dns_resolver.apple.v3.AppleDnsResolverConfig"`))

		bad = dnsBootstrap(freePort(), "",
			`type: STRICT_DNS, typed_dns_resolver_config: {name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}, `+dnsEndpoint("backend.test", 80))
		writeFile(dir+"/category.yaml", bad)
		res = Run("-c", dir+"/category.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(`static_resources.clusters[0].typed_dns_resolver_config.typed_config: extension "proxy.filters.http.router" (category envoy.filters.http) cannot be used here: expected category envoy.network.dns_resolver`))

		bad = dnsBootstrap(freePort(), "",
			"type: LOGICAL_DNS, dns_failure_refresh_rate: {base_interval: 5s, max_interval: 1s}, typed_dns_resolver_config: "+
				caresResolver(53, "qcache_max_ttl: 60")+", "+dnsEndpoint("backend.test", 80))
		writeFile(dir+"/bad2.yaml", bad)
		res = Run("-c", dir+"/bad2.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].dns_failure_refresh_rate.max_interval: must be greater than or equal to the base_interval"))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].typed_dns_resolver_config.typed_config.qcache_max_ttl: the c-ares query cache is not supported by Outrigger"))
	})
})

var _ = Describe("The DNS cluster extension (cluster_type envoy.clusters.dns)", func() {
	It("resolves as STRICT_DNS, or as LOGICAL_DNS with all_addresses_in_single_endpoint, from its own settings alone", func() {
		dns := startDNSServer()
		a, b, backendPort := startBackendPair()
		dns.set("backend.test", "127.0.0.1", "127.0.0.2")
		dnsType := func(extra string) string {
			return fmt.Sprintf(`cluster_type: {name: envoy.cluster.dns, typed_config: {"@type": type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster, dns_refresh_rate: 0.1s, dns_lookup_family: V4_ONLY, typed_dns_resolver_config: %s%s}}`,
				caresResolver(dns.port, ""), extra)
		}
		client := &http.Client{Timeout: 5 * time.Second}

		// Every address is a host; the cluster's own resolver points nowhere
		// and has no effect, with a warning.
		port := freePort()
		s := Start(newDir(), dnsBootstrap(port, "", fmt.Sprintf(
			"%s, dns_resolvers: [{socket_address: {address: 127.0.0.1, port_value: 9}}], %s", dnsType(""), dnsEndpoint("backend.test", backendPort))))
		Expect(spread(client, port, 10)).To(Equal(map[string]int{"A": 5, "B": 5}))
		Expect(hostLine(s.Get("/clusters").Body, "svc", b.addr, "hostname")).To(Equal("backend.test"))
		dns.set("backend.test", "127.0.0.2")
		Eventually(func() string { return hostLine(s.Get("/clusters").Body, "svc", a.addr, "hostname") }, 10*time.Second).
			Should(Equal("<missing>"))
		Expect(spread(client, port, 4)).To(Equal(map[string]int{"B": 4}))
		Expect(s.Stderr()).To(ContainSubstring("dns_resolvers has no effect on a cluster of type envoy.cluster.dns"))

		// One host, the answer's first address.
		dns.set("backend.test", "127.0.0.1", "127.0.0.2")
		port = freePort()
		logical := Start(newDir(), dnsBootstrap(port, "", fmt.Sprintf(
			"%s, %s", dnsType(", all_addresses_in_single_endpoint: true"), dnsEndpoint("backend.test", backendPort))))
		Expect(spread(client, port, 4)).To(Equal(map[string]int{"A": 4}))
		Expect(hostLine(logical.Get("/clusters").Body, "svc", b.addr, "hostname")).To(Equal("<missing>"))
		Expect(statValue(logical, "cluster.svc.membership_total")).To(Equal("1"))
	})

	It("reports the errors of its settings under cluster_type.typed_config", func() {
		dir := newDir()
		bad := dnsBootstrap(freePort(), "", `cluster_type: {name: envoy.cluster.dns, typed_config: {"@type": type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster, `+
			`dns_failure_refresh_rate: {base_interval: 5s, max_interval: 1s}, dns_min_refresh_rate: 0.5s, all_addresses_in_single_endpoint: true, typed_dns_resolver_config: `+caresResolver(53, "qcache_max_ttl: 60")+`}}, `+
			`load_assignment: {cluster_name: svc, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: a.test, port_value: 80}}}}, {endpoint: {address: {socket_address: {address: b.test, port_value: 80}}}}]}]}`)
		writeFile(dir+"/bad.yaml", bad)
		res := Run("-c", dir+"/bad.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.dns_failure_refresh_rate.max_interval: must be greater than or equal to the base_interval"))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.dns_min_refresh_rate: value must be greater than or equal to 1s"))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.typed_dns_resolver_config.typed_config.qcache_max_ttl: the c-ares query cache is not supported by Outrigger"))
		Expect(res.Stderr).To(ContainSubstring("static_resources.clusters[0].load_assignment: LOGICAL_DNS clusters must have a single locality_lb_endpoint and a single lb_endpoint"))
	})
})
