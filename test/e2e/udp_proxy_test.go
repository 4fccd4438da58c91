package e2e

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// udpBootstrap is a UDP listener "udp" on an OS-chosen loopback port whose
// udp_proxy (stat_prefix "front") has the given fields (YAML flow mapping
// content) and logs each session to stdout, with the given clusters (YAML
// flow items) and listener fields.
func udpBootstrap(proxyFields, listenerFields string, clusters ...string) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: udp
    address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: UDP}}
    %s
    listener_filters:
    - name: envoy.filters.udp_listener.udp_proxy
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig
        stat_prefix: front
        access_log:
        - name: envoy.access_loggers.stdout
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
            log_format: {text_format_source: {inline_string: "UDPLOG %%UPSTREAM_CLUSTER%% %%UPSTREAM_HOST%% %%BYTES_RECEIVED%% %%BYTES_SENT%% %%DOWNSTREAM_REMOTE_ADDRESS%% %%DYNAMIC_METADATA(udp.proxy.session:datagrams_received)%% %%DYNAMIC_METADATA(udp.proxy.session:datagrams_sent)%% %%ACCESS_LOG_TYPE%%\n"}}
%s
`, strings.Join(clusters, ", "), listenerFields, strings.ReplaceAll(blockFields(proxyFields), "          ", "        "))
}

// udpRoute is a udp_proxy matcher sending every datagram to cluster.
func udpRoute(cluster string) string {
	return `matcher: {on_no_match: {action: {name: route, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route, cluster: ` + cluster + `}}}}`
}

// startUDPEcho answers every datagram with tag, ":" and the datagram until
// the spec ends, and returns its port.
func startUDPEcho(tag string) int {
	GinkgoHelper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteToUDPAddrPort(append([]byte(tag+":"), buf[:n]...), from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// udpClient is a client socket on a loopback IP, closed with the spec.
func udpClient(ip string) *net.UDPConn {
	GinkgoHelper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return c
}

// exchange sends msg from c to the proxy's port and returns the answer,
// "" when none comes within 5 s: generous, for a loaded machine (loopback
// does not drop datagrams).
func exchange(c *net.UDPConn, port int, msg string) string {
	GinkgoHelper()
	return exchangeWithin(c, port, msg, 5*time.Second)
}

// unanswered reports whether msg from c gets no answer within half a
// second: what a dropped datagram looks like.
func unanswered(c *net.UDPConn, port int, msg string) bool {
	GinkgoHelper()
	return exchangeWithin(c, port, msg, 500*time.Millisecond) == ""
}

// exchangeWithin is exchange waiting at most wait for the answer.
func exchangeWithin(c *net.UDPConn, port int, msg string, wait time.Duration) string {
	GinkgoHelper()
	_, err := c.WriteToUDPAddrPort([]byte(msg), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.SetReadDeadline(time.Now().Add(wait))).To(Succeed())
	buf := make([]byte, 65536)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

var _ = Describe("UDP proxy", func() {
	It("proxies datagrams both ways in sessions spread by round robin, sticks a client to its host, counts, logs and ends idle sessions", func() {
		a, b := startUDPEcho("A"), startUDPEcho("B")
		s := Start(newDir(), udpBootstrap(udpRoute("echo")+", idle_timeout: 2s", "", tcpCluster("echo", a, b)), "--file-flush-interval-msec", "50")
		port := listenerPort(s, "udp")

		hosts := map[string]int{}
		var clients []*net.UDPConn
		for i := range 4 {
			c := udpClient("127.0.0.1")
			clients = append(clients, c)
			got := exchange(c, port, "ping"+strconv.Itoa(i))
			Expect(got).To(MatchRegexp(`^[AB]:ping%d$`, i))
			hosts[got[:1]]++
			// The same client stays with its host.
			Expect(exchange(c, port, "again")).To(Equal(got[:1] + ":again"))
		}
		Expect(hosts).To(Equal(map[string]int{"A": 2, "B": 2}), "round robin over two hosts")

		Expect(statValue(s, "udp.front.downstream_sess_total")).To(Equal("4"))
		Expect(statValue(s, "udp.front.downstream_sess_rx_datagrams")).To(Equal("8"))
		// A datagram to the client is counted once sent: the client may
		// have read the last one before the count moves.
		Eventually(func() string { return statValue(s, "udp.front.downstream_sess_tx_datagrams") }).Should(Equal("8"))
		// 4 x "pingN" + 4 x "again" in, each back with a 2-byte tag.
		Expect(statValue(s, "udp.front.downstream_sess_rx_bytes")).To(Equal("40"))
		Eventually(func() string { return statValue(s, "udp.front.downstream_sess_tx_bytes") }).Should(Equal("56"))
		Expect(statValue(s, "cluster.echo.udp.sess_tx_datagrams")).To(Equal("8"))
		Expect(statValue(s, "cluster.echo.udp.sess_rx_datagrams")).To(Equal("8"))
		Expect(statValue(s, "cluster.echo.upstream_cx_tx_bytes_total")).To(Equal("40"))
		Expect(statValue(s, "cluster.echo.upstream_cx_rx_bytes_total")).To(Equal("56"))
		Expect(statValue(s, "udp.front.downstream_sess_no_route")).To(Equal("0"))
		Expect(statValue(s, "listener.127.0.0.1_0.udp.downstream_rx_datagram_dropped")).To(Equal("0"))
		prom := s.Get("/stats/prometheus").Body
		Expect(prom).To(ContainSubstring("# HELP proxy_udp_downstream_sess_total Sessions the UDP proxy created.\n"))
		Expect(prom).To(ContainSubstring(`proxy_udp_downstream_sess_total{proxy_udp_prefix="front"} 4`))
		Expect(prom).To(ContainSubstring(`proxy_cluster_udp_sess_tx_datagrams{proxy_cluster_name="echo"} 8`))

		// Idle for two seconds: every session ends, counted and logged.
		Eventually(func() string { return statValue(s, "udp.front.downstream_sess_active") }, 10*time.Second).Should(Equal("0"))
		Expect(statValue(s, "udp.front.idle_timeout")).To(Equal("4"))
		for _, c := range clients {
			peer := strings.ReplaceAll(c.LocalAddr().String(), ".", `\.`)
			Eventually(s.Stdout).Should(MatchRegexp(`UDPLOG echo 127\.0\.0\.1:(%d|%d) 10 14 %s 2 2 UdpSessionEnd\n`, a, b, peer))
		}
		// A new datagram from an old client makes a new session.
		Expect(exchange(clients[0], port, "back")).To(MatchRegexp(`^[AB]:back$`))
		Expect(statValue(s, "udp.front.downstream_sess_total")).To(Equal("5"))
	})

	It("pins each client IP to one host with hash_policies source_ip on a ring hash cluster", func() {
		a, b := startUDPEcho("A"), startUDPEcho("B")
		cluster := strings.Replace(tcpCluster("echo", a, b), "connect_timeout: 1s", "connect_timeout: 1s, lb_policy: RING_HASH", 1)
		s := Start(newDir(), udpBootstrap(udpRoute("echo")+", hash_policies: [{source_ip: true}]", "", cluster))
		port := listenerPort(s, "udp")
		// Two clients (two ports) per IP land on the same host: with a
		// random pick per session, 8 IPs would all agree 1 time in 256.
		for i := 2; i < 10; i++ {
			ip := "127.0.0." + strconv.Itoa(i)
			first := exchange(udpClient(ip), port, "x")
			Expect(first).To(MatchRegexp(`^[AB]:x$`))
			Expect(exchange(udpClient(ip), port, "x")).To(Equal(first), "the second client of %s", ip)
		}
		Expect(statValue(s, "udp.front.downstream_sess_total")).To(Equal("16"))
	})

	It("carries a real DNS query and its answer", func() {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		mux := dns.NewServeMux()
		mux.HandleFunc("svc.example.", func(w dns.ResponseWriter, q *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(q)
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.IPv4(10, 1, 2, 3)})
			_ = w.WriteMsg(m)
		})
		srv := &dns.Server{PacketConn: pc, Handler: mux}
		go func() { _ = srv.ActivateAndServe() }()
		DeferCleanup(srv.Shutdown)
		s := Start(newDir(), udpBootstrap(udpRoute("dns"), "", tcpCluster("dns", pc.LocalAddr().(*net.UDPAddr).Port)))
		port := listenerPort(s, "udp")

		q := new(dns.Msg)
		q.SetQuestion("svc.example.", dns.TypeA)
		client := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
		var answer *dns.Msg
		Eventually(func() error {
			var err error
			answer, _, err = client.Exchange(q, "127.0.0.1:"+strconv.Itoa(port))
			return err
		}, 10*time.Second).Should(Succeed())
		Expect(answer.Rcode).To(Equal(dns.RcodeSuccess))
		Expect(answer.Answer).To(HaveLen(1))
		Expect(answer.Answer[0].(*dns.A).A.String()).To(Equal("10.1.2.3"))
	})

	It("drops datagrams over max_rx_datagram_size, holds sessions to max_connections and logs live sessions periodically", func() {
		a := startUDPEcho("A")
		cluster := strings.Replace(tcpCluster("echo", a), "connect_timeout: 1s", "connect_timeout: 1s, circuit_breakers: {thresholds: [{max_connections: 1}]}", 1)
		s := Start(newDir(), udpBootstrap(udpRoute("echo")+", access_log_options: {access_log_flush_interval: 0.2s}", "udp_listener_config: {downstream_socket_config: {max_rx_datagram_size: 100}}", cluster),
			"--file-flush-interval-msec", "50")
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")
		Expect(unanswered(c, port, strings.Repeat("x", 101))).To(BeTrue())
		Expect(statValue(s, "listener.127.0.0.1_0.udp.downstream_rx_datagram_dropped")).To(Equal("1"))
		Expect(exchange(c, port, strings.Repeat("x", 100))).To(Equal("A:" + strings.Repeat("x", 100)))
		// A second client would be a second session: over the limit.
		Expect(unanswered(udpClient("127.0.0.1"), port, "y")).To(BeTrue())
		Expect(statValue(s, "cluster.echo.upstream_cx_overflow")).To(Equal("1"))
		Expect(statValue(s, "udp.front.downstream_sess_total")).To(Equal("1"))

		// access_log_flush_interval logs the live session periodically.
		Eventually(s.Stdout).Should(MatchRegexp(`UDPLOG echo 127\.0\.0\.1:%d 100 102 %s 1 1 UdpPeriodic\n`, a, strings.ReplaceAll(c.LocalAddr().String(), ".", `\.`)))

		// The listener is in /listeners.
		Expect(listenerAddr(s, "udp")).To(Equal("127.0.0.1:" + strconv.Itoa(port)))
	})

	It("routes by source IP with a matcher tree and counts datagrams without a route", func() {
		a := startUDPEcho("A")
		matcher := `matcher: {matcher_tree: {input: {name: ip, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput}}, ` +
			`exact_match_map: {map: {"127.0.0.3": {action: {name: route, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route, cluster: echo}}}}}}}`
		s := Start(newDir(), udpBootstrap(matcher, "", tcpCluster("echo", a)))
		port := listenerPort(s, "udp")
		Expect(exchange(udpClient("127.0.0.3"), port, "hi")).To(Equal("A:hi"))
		Expect(unanswered(udpClient("127.0.0.4"), port, "hi")).To(BeTrue())
		Expect(statValue(s, "udp.front.downstream_sess_no_route")).To(Equal("1"))
		Expect(statValue(s, "udp.front.downstream_sess_total")).To(Equal("1"))
	})

	DescribeTable("refuses what it does not implement, naming the field",
		func(proxyFields, listenerFields, want string) {
			r, _ := validate("udp.yaml", udpBootstrap(udpRoute("echo")+proxyFields, listenerFields, tcpCluster("echo", 9)))
			Expect(r.ExitCode).NotTo(Equal(0), r.Stdout+r.Stderr)
			Expect(r.Stdout + r.Stderr).To(ContainSubstring(want))
		},
		Entry("prefer_gro", ", upstream_socket_config: {prefer_gro: true}", "", "typed_config.upstream_socket_config.prefer_gro"),
		Entry("quic_options", "", "udp_listener_config: {quic_options: {}}", "static_resources.listeners[0].udp_listener_config.quic_options"),
		Entry("a connection setting", "", "per_connection_buffer_limit_bytes: 1024", "static_resources.listeners[0].per_connection_buffer_limit_bytes: not supported on a UDP listener"),
		Entry("filter chains", "", "filter_chains: [{filters: [{name: envoy.filters.network.echo, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo}}]}]", "static_resources.listeners[0].filter_chains"),
	)

	It("sends from the client's IP address with use_original_src_ip", func() {
		if os.Geteuid() != 0 {
			Skip("IP_TRANSPARENT needs CAP_NET_ADMIN")
		}
		// The host answers with the address the datagram came from.
		srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		go func() {
			buf := make([]byte, 2048)
			for {
				_, from, err := srv.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				_, _ = srv.WriteToUDPAddrPort([]byte("from:"+from.Addr().String()), from)
			}
		}()
		s := Start(newDir(), udpBootstrap(udpRoute("echo")+", use_original_src_ip: true", "", tcpCluster("echo", srv.LocalAddr().(*net.UDPAddr).Port)))
		port := listenerPort(s, "udp")
		// On loopback the client's address is the host's too: the answer
		// to it reaches the session's socket, and comes back.
		Expect(exchange(udpClient("127.0.0.2"), port, "who")).To(Equal("from:127.0.0.2"))
		// Counted after the send returns, which the answer can beat.
		Eventually(func() string { return statValue(s, "cluster.echo.udp.sess_tx_datagrams") }).Should(Equal("1"))
	})

	It("validates a UDP listener in --mode validate", func() {
		r, _ := validate("udp.yaml", udpBootstrap(udpRoute("echo")+", hash_policies: [{key: k}], use_per_packet_load_balancing: true", "", tcpCluster("echo", 9)))
		Expect(r.ExitCode).To(Equal(0), r.Stdout+r.Stderr)
	})
})

// freeUDPPort is a loopback port free for both TCP and UDP.
func freeUDPPort() int {
	GinkgoHelper()
	for range 100 {
		port := freePort()
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			continue
		}
		Expect(c.Close()).To(Succeed())
		return port
	}
	Fail("no free loopback UDP port")
	return 0
}

// udpLDSListener is a discovered UDP listener "dyn" on port whose
// udp_proxy sends everything to cluster (one line of an LDS response).
func udpLDSListener(port int, cluster string) string {
	return fmt.Sprintf(`- {"@type": type.googleapis.com/envoy.config.listener.v3.Listener, name: dyn, address: {socket_address: {address: 127.0.0.1, port_value: %d, protocol: UDP}}, `+
		`listener_filters: [{name: envoy.filters.udp_listener.udp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig, stat_prefix: front, %s}}]}`, port, udpRoute(cluster))
}

var _ = Describe("UDP proxy: listeners from LDS", func() {
	It("adds a UDP listener, replaces it on its port (its sessions end with the old one), and removes it", func() {
		a, b := startUDPEcho("A"), startUDPEcho("B")
		port := freeUDPPort()
		dir := ldsSetup("version_info: v1\nresources:\n" + udpLDSListener(port, "a") + "\n")
		file, err := yamlQuote(filepath.Join(dir, ldsFileName))
		Expect(err).NotTo(HaveOccurred())
		s := Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s, %s]
dynamic_resources:
  lds_config: {resource_api_version: V3, path_config_source: {path: %s}}
`, tcpCluster("a", a), tcpCluster("b", b), file))
		waitLive(s)

		first := udpClient("127.0.0.1")
		Expect(exchange(first, port, "one")).To(Equal("A:one"))
		Expect(statValue(s, "udp.front.downstream_sess_active")).To(Equal("1"))

		replaceLDS(dir, "version_info: v2\nresources:\n"+udpLDSListener(port, "b")+"\n")
		waitStat(s, "listener_manager.listener_modified", "1")
		// The replaced listener's session ended with it.
		Eventually(func() string { return statValue(s, "udp.front.downstream_sess_active") }, 10*time.Second).Should(Equal("0"))
		Eventually(func() string { return exchange(udpClient("127.0.0.1"), port, "two") }, 10*time.Second).Should(Equal("B:two"))
		Expect(statValue(s, "udp.front.downstream_sess_active")).To(Equal("1"))

		replaceLDS(dir, "version_info: v3\nresources: []\n")
		waitStat(s, "listener_manager.listener_removed", "1")
		Eventually(func() string { return statValue(s, "udp.front.downstream_sess_active") }, 10*time.Second).Should(Equal("0"))
		Expect(unanswered(udpClient("127.0.0.1"), port, "three")).To(BeTrue())
		Expect(s.Get("/listeners").Body).To(Equal(""))
	})
})

var _ = Describe("UDP proxy: listeners beside TCP ones", func() {
	It("shares a port with a TCP listener, and /drain_listeners stops it and ends its sessions", func() {
		a := startUDPEcho("A")
		port := freeUDPPort()
		s := Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: tcp
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [{filters: [{name: envoy.filters.network.direct_response, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config, response: {inline_string: "tcp here"}}}]}]
  - name: udp
    address: {socket_address: {address: 127.0.0.1, port_value: %d, protocol: UDP}}
    listener_filters:
    - name: envoy.filters.udp_listener.udp_proxy
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig, stat_prefix: front, %s}
`, tcpCluster("echo", a), port, port, udpRoute("echo")))
		c := udpClient("127.0.0.1")
		Expect(exchange(c, port, "hi")).To(Equal("A:hi"))
		tc := dialTCP(port)
		got, err := io.ReadAll(tc)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("tcp here"))
		Expect(s.Get("/listeners").Body).To(Equal(fmt.Sprintf("tcp::127.0.0.1:%d\nudp::127.0.0.1:%d\n", port, port)))
		Expect(statValue(s, "udp.front.downstream_sess_active")).To(Equal("1"))

		Expect(s.Post("/drain_listeners").Status).To(Equal(200))
		Eventually(func() string { return statValue(s, "udp.front.downstream_sess_active") }, 10*time.Second).Should(Equal("0"))
		Expect(unanswered(c, port, "again")).To(BeTrue())
	})
})
