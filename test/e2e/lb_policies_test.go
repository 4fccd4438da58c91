package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// lbUpstream is an upstream that answers with its name, in the body
// and in x-upstream.
func lbUpstream(name string) int {
	GinkgoHelper()
	return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("x-upstream", name)
		_, _ = io.WriteString(w, name)
	}), false))
}

// lbCluster is a cluster's extra fields (YAML flow mapping content) with
// one endpoint per port and the given policy fields.
func lbCluster(policy string, ports ...int) string {
	var eps []string
	for _, p := range ports {
		eps = append(eps, fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}", p))
	}
	s := "{load_assignment: {endpoints: [{lb_endpoints: [" + strings.Join(eps, ", ") + "]}]}"
	if policy != "" {
		s += ", " + policy
	}
	return s + "}"
}

// lbGet sends one GET on a connection of its own and returns the status,
// the upstream that answered and the response's Set-Cookie.
func lbGet(port int, path string, header ...string) (int, string, string) {
	GinkgoHelper()
	status, _, h := stickyGet(port, path, header...)
	return status, h.Get("x-upstream"), h.Get("set-cookie")
}

// lbProxy starts a sidecar whose one route goes to cluster "up" with the
// given extra cluster fields and route action fields.
func lbProxy(cluster, action string) (*Sidecar, int) {
	GinkgoHelper()
	port := freePort()
	routes := `[{match: {prefix: /}, route: {cluster: up` + action + `}}]`
	s := Start(newDir(), proxySpec{Port: port, Routes: routes, Clusters: []proxyCluster{{Name: "up", Extra: cluster}}}.YAML())
	s.WaitLive()
	return s, port
}

var _ = Describe("Load balancing policies", func() {
	It("keeps least request traffic off a busy host", func() {
		// Every host holds its requests at first, so that least request
		// spreads them and the busy host collects two; then the other
		// four answer, and the busy one keeps holding until the end.
		arrived := make(chan string, 256)
		warm, gate := make(chan struct{}), make(chan struct{})
		var warmOnce sync.Once
		openWarm := func() { warmOnce.Do(func() { close(warm) }) }
		// Cleanups run last-in first-out: the held requests are released
		// first, then the sidecar stops, then the clients are waited for.
		var wg sync.WaitGroup
		DeferCleanup(wg.Wait)
		host := func(name string, release chan struct{}) int {
			return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case arrived <- name:
				default:
				}
				select {
				case <-release:
				case <-r.Context().Done():
				}
				w.Header().Set("x-upstream", name)
			}), false))
		}
		busy := host("busy", gate)
		ports := []int{busy}
		for _, n := range []string{"a", "b", "c", "d"} {
			ports = append(ports, host(n, warm))
		}
		s, port := lbProxy(lbCluster("lb_policy: LEAST_REQUEST, least_request_lb_config: {choice_count: 4}", ports...), "")
		DeferCleanup(func() { openWarm(); close(gate) })
		c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		held := 0
		for sent := 0; held < 2; sent++ {
			Expect(sent).To(BeNumerically("<", 100), "the busy host never got two requests")
			wg.Go(func() {
				if resp, err := c.Get(listenerURL(port, "/")); err == nil {
					resp.Body.Close()
				}
			})
			select {
			case name := <-arrived:
				if name == "busy" {
					held++
				}
			case <-time.After(5 * time.Second):
				Fail("a request never reached an upstream")
			}
		}
		openWarm()
		Eventually(func() string { return s.Get("/clusters").Body }).Should(And(
			ContainSubstring(fmt.Sprintf("up::127.0.0.1:%d::rq_active::2\n", busy)),
			Not(MatchRegexp(`rq_active::[1-9]\n(?s:.*)rq_active::[1-9]\n`))))
		// With four samples of five hosts, the busy one comes back only
		// when every sample is it (1 in 625); allow for that twice.
		got := map[string]int{}
		quick := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for range 60 {
			resp, err := quick.Get(listenerURL(port, "/"))
			if err != nil {
				got["busy"]++
				continue
			}
			got[resp.Header.Get("x-upstream")]++
			resp.Body.Close()
		}
		Expect(got["busy"]).To(BeNumerically("<=", 2), "%v", got)
		for _, n := range []string{"a", "b", "c", "d"} {
			Expect(got[n]).To(BeNumerically(">", 3), "%v", got)
		}
	})

	It("reaches every host at random", func() {
		var ports []int
		for _, n := range []string{"a", "b", "c", "d"} {
			ports = append(ports, lbUpstream(n))
		}
		_, port := lbProxy(lbCluster("lb_policy: RANDOM", ports...), "")
		got := map[string]int{}
		for range 200 {
			status, up, _ := lbGet(port, "/")
			Expect(status).To(Equal(http.StatusOK))
			got[up]++
		}
		for _, n := range []string{"a", "b", "c", "d"} {
			Expect(got[n]).To(BeNumerically(">", 20), "%v", got)
		}
	})

	It("keeps a header's key on one host with ring hash, and publishes the ring's gauges", func() {
		names := []string{"a", "b", "c", "d"}
		var ports []int
		for _, n := range names {
			ports = append(ports, lbUpstream(n))
		}
		s, port := lbProxy(lbCluster("lb_policy: RING_HASH, ring_hash_lb_config: {minimum_ring_size: 64, hash_function: MURMUR_HASH_2}", ports...),
			", hash_policy: [{header: {header_name: x-user}}]")
		used := map[string]bool{}
		for i := range 20 {
			user := fmt.Sprintf("user-%d", i)
			_, first, _ := lbGet(port, "/", "x-user", user)
			for range 4 {
				_, up, _ := lbGet(port, "/", "x-user", user)
				Expect(up).To(Equal(first), "%s moved", user)
			}
			used[first] = true
		}
		Expect(len(used)).To(BeNumerically(">=", 2), "20 keys all went to %v", used)
		Expect(statValue(s, "cluster.up.ring_hash_lb.size")).To(Equal("64"))
		Expect(statValue(s, "cluster.up.ring_hash_lb.min_hashes_per_host")).To(Equal("16"))
		Expect(statValue(s, "cluster.up.ring_hash_lb.max_hashes_per_host")).To(Equal("16"))
		prom := s.Get("/stats/prometheus").Body
		Expect(prom).To(ContainSubstring(`proxy_cluster_ring_hash_lb_size{proxy_cluster_name="up"} 64`))
	})

	It("hashes with a typed ring hash policy's own hash_policy, not the route's", func() {
		names := []string{"a", "b", "c", "d"}
		var ports []int
		for _, n := range names {
			ports = append(ports, lbUpstream(n))
		}
		// The route hashes on x-route, which changes on every request;
		// the cluster's policy on x-user, which decides alone.
		policy := `load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.ring_hash, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash, minimum_ring_size: 64, consistent_hashing_lb_config: {hash_policy: [{header: {header_name: x-user}}]}}}}]}`
		_, port := lbProxy(lbCluster(policy, ports...), ", hash_policy: [{header: {header_name: x-route}}]")
		used := map[string]bool{}
		for i := range 20 {
			user := fmt.Sprintf("user-%d", i)
			_, first, _ := lbGet(port, "/", "x-user", user, "x-route", user+"-0")
			for r := range 4 {
				_, up, _ := lbGet(port, "/", "x-user", user, "x-route", fmt.Sprintf("%s-%d", user, r+1))
				Expect(up).To(Equal(first), "%s moved", user)
			}
			used[first] = true
		}
		Expect(len(used)).To(BeNumerically(">=", 2), "20 keys all went to %v", used)
		// Without x-user the cluster's policy yields no hash: the picks
		// are random, though x-route stays the same.
		spread := map[string]bool{}
		for range 40 {
			_, up, _ := lbGet(port, "/", "x-route", "fixed")
			spread[up] = true
		}
		Expect(len(spread)).To(BeNumerically(">=", 2), "requests without x-user all went to %v", spread)
	})

	It("bounds a hot key's host with hash_balance_factor, spilling its requests to the others", func() {
		// Three hosts hold every request until the end; six requests with
		// one key arrive one after the other. With a factor of 150 the
		// key's host may have (active + 1) x 1.5 / 3 of them, rounded up:
		// it takes the 1st, 2nd, 3rd and 5th, the 4th and 6th spill.
		arrived := make(chan string, 16)
		release := make(chan struct{})
		var once sync.Once
		releaseOnce := func() { once.Do(func() { close(release) }) }
		var wg sync.WaitGroup
		DeferCleanup(wg.Wait)
		var ports []int
		for _, name := range []string{"a", "b", "c"} {
			ports = append(ports, portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- name
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}), false)))
		}
		for _, policy := range []string{
			"lb_policy: MAGLEV, common_lb_config: {consistent_hashing_lb_config: {hash_balance_factor: 150}}",
			`load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.ring_hash, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash, consistent_hashing_lb_config: {hash_balance_factor: 150}}}}]}`,
		} {
			s, port := lbProxy(lbCluster(policy, ports...), ", hash_policy: [{header: {header_name: x-key}}]")
			// Released before the sidecar stops (cleanups run last-in
			// first-out).
			DeferCleanup(releaseOnce)
			c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			got := map[string]int{}
			for range 6 {
				wg.Go(func() {
					req, _ := http.NewRequest("GET", listenerURL(port, "/"), nil)
					req.Header.Set("x-key", "hot")
					if resp, err := c.Do(req); err == nil {
						resp.Body.Close()
					}
				})
				select {
				case name := <-arrived:
					got[name]++
				case <-time.After(5 * time.Second):
					Fail("a request never reached an upstream")
				}
			}
			counts := []int{got["a"], got["b"], got["c"]}
			Expect(counts).To(ContainElement(4), "%s: %v", policy, got)
			Expect(counts).NotTo(ContainElement(BeNumerically(">", 4)), "%s: %v", policy, got)
			Expect(statValue(s, "cluster.up.upstream_rq_active")).To(Equal("6"))
		}
	})

	It("makes a cookie for maglev (load_balancing_policy), sets it, and keeps its key on one host", func() {
		var ports []int
		for _, n := range []string{"a", "b", "c"} {
			ports = append(ports, lbUpstream(n))
		}
		s, port := lbProxy(lbCluster(`load_balancing_policy: {policies: [
		  {typed_extension_config: {name: envoy.load_balancing_policies.maglev, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.maglev.v3.Maglev, table_size: 1009}}}]}`, ports...),
			`, hash_policy: [{cookie: {name: sticky, ttl: 60s, path: /, attributes: [{name: SameSite, value: Lax}]}}]`)
		status, _, cookie := lbGet(port, "/")
		Expect(status).To(Equal(http.StatusOK))
		Expect(cookie).To(MatchRegexp(`^sticky="[0-9a-f]{16}"; Max-Age=60; Path=/; SameSite=Lax; HttpOnly$`))
		value := regexp.MustCompile(`"([0-9a-f]{16})"`).FindStringSubmatch(cookie)[1]
		_, first, again := lbGet(port, "/", "cookie", "sticky="+value)
		Expect(again).To(BeEmpty(), "a request with the cookie got another")
		for range 10 {
			_, up, _ := lbGet(port, "/", "cookie", "theme=dark; sticky="+value)
			Expect(up).To(Equal(first))
		}
		Expect(statValue(s, "cluster.up.maglev_lb.min_entries_per_host")).To(Equal("336"))
		Expect(statValue(s, "cluster.up.maglev_lb.max_entries_per_host")).To(Equal("337"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring(fmt.Sprintf("up::127.0.0.1:%d::rq_total::", ports[0])))
	})

	It("keeps a client on one host by its source IP, over HTTP and tcp_proxy", func() {
		var ports []int
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			ports = append(ports, lbUpstream(n))
		}
		_, port := lbProxy(lbCluster("lb_policy: RING_HASH", ports...), ", hash_policy: [{connection_properties: {source_ip: true}}]")
		_, first, _ := lbGet(port, "/")
		for range 10 {
			_, up, _ := lbGet(port, "/")
			Expect(up).To(Equal(first))
		}

		var tcpPorts []int
		for i := range 5 {
			name := strconv.Itoa(i)
			tcpPorts = append(tcpPorts, startTCPServer(func(c *net.TCPConn) { _, _ = io.WriteString(c, name) }))
		}
		tport := freePort()
		cluster := strings.TrimSuffix(tcpCluster("ring", tcpPorts...), "}") + ", lb_policy: MAGLEV}"
		ts := Start(newDir(), tcpBootstrap(tport, "cluster: ring, hash_policy: [{source_ip: {}}]", cluster))
		ts.WaitLive()
		seen := map[string]int{}
		for range 10 {
			c := dialTCP(tport)
			b, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			c.Close()
			seen[string(b)]++
		}
		Expect(seen).To(HaveLen(1), "the connections of one client went to %v", seen)
	})

	It("ramps a host that joins over EDS up through its slow start window", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ingress := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("ingress", "backend")}})}
		cluster := edsCluster("backend", "backend-svc", "")
		cluster["round_robin_lb_config"] = flowYAML(`{slow_start_config: {slow_start_window: 120s, min_weight_percent: {value: 10}}}`)
		s := Launch(newDir(), "bootstrap.yaml", adsBootstrap(m.port, "", cluster))
		s.WaitForAdmin()
		m.set(adsSnapshot("v1", ingress, loadAssignment("backend-svc", edsEndpoint{port: a})))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		m.set(adsSnapshot("v2", ingress, loadAssignment("backend-svc", edsEndpoint{port: a}, edsEndpoint{port: b})))
		waitStat(s, "cluster.backend.membership_total", "2")
		// For its first 12 s, B weighs 10% of its weight: about 1 pick
		// in 11, where round robin alone would give it every other one.
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		got := map[string]int{}
		for range 44 {
			got[httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body]++
		}
		Expect(got["A"]+got["B"]).To(Equal(44), "%v", got)
		Expect(got["B"]).To(BeNumerically(">=", 1), "%v", got)
		Expect(got["B"]).To(BeNumerically("<=", 12), "%v", got)
	})

	It("refuses bad load balancer settings with their field paths", func() {
		base := func(cluster string) string {
			return `{static_resources: {clusters: [{name: c, ` + cluster + `, load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}]}}`
		}
		for cluster, want := range map[string]string{
			`lb_policy: MAGLEV, maglev_lb_config: {table_size: 65536}`:                                      "static_resources.clusters[0].maglev_lb_config.table_size: The table size of maglev must be prime number (65536 is not)",
			`lb_policy: RING_HASH, ring_hash_lb_config: {minimum_ring_size: 4096, maximum_ring_size: 1024}`: "static_resources.clusters[0].ring_hash_lb_config.minimum_ring_size: minimum_ring_size (4096) > maximum_ring_size (1024)",
			`lb_policy: LEAST_REQUEST, least_request_lb_config: {choice_count: 1}`:                          "static_resources.clusters[0].least_request_lb_config.choice_count: value must be greater than or equal to 2",
			`load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.ring_hash, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash, consistent_hashing_lb_config: {hash_balance_factor: 99}}}}]}`: "static_resources.clusters[0].load_balancing_policy.policies[0].typed_extension_config.typed_config.consistent_hashing_lb_config.hash_balance_factor: value must be greater than or equal to 100",
		} {
			r, _ := validate("lb.yaml", base(cluster))
			Expect(r.ExitCode).NotTo(Equal(0), cluster)
			Expect(r.Stderr).To(ContainSubstring(want))
		}
	})
})

// fullListener returns the address of a loopback listening socket that
// never accepts and whose backlog is full: a connection attempt to it
// hangs (the kernel drops its SYNs) until the dialer gives up.
func fullListener() string {
	GinkgoHelper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = syscall.Close(fd) })
	Expect(syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})).To(Succeed())
	// A backlog of 0 queues one connection.
	Expect(syscall.Listen(fd, 0)).To(Succeed())
	sa, err := syscall.Getsockname(fd)
	Expect(err).NotTo(HaveOccurred())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return addr
		}
		DeferCleanup(c.Close)
	}
	Fail("the listener's backlog never filled")
	return ""
}

var _ = Describe("Happy Eyeballs", func() {
	It("connects to an endpoint's additional address when its address never answers", func() {
		dead := fullListener()
		deadPort, _ := strconv.Atoi(dead[strings.LastIndex(dead, ":")+1:])
		live := lbUpstream("live")
		// Without the race the request would wait on the dead address
		// for the 10 s connect_timeout, past its 3 s route timeout.
		cluster := fmt.Sprintf(`{connect_timeout: 10s, load_assignment: {endpoints: [{lb_endpoints: [{endpoint: {
		  address: {socket_address: {address: 127.0.0.1, port_value: %d}},
		  additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: %d}}}]}}]}]},
		  upstream_connection_options: {happy_eyeballs_config: {first_address_family_version: V4}}}`, deadPort, live)
		s, port := lbProxy(cluster, ", timeout: 3s")
		for range 3 {
			status, up, _ := lbGet(port, "/")
			Expect(status).To(Equal(http.StatusOK))
			Expect(up).To(Equal("live"))
		}
		Expect(statValue(s, "cluster.up.upstream_cx_connect_fail")).To(Equal("0"))
		Expect(statValue(s, "cluster.up.upstream_rq_timeout")).To(Equal("0"))
	})
})
