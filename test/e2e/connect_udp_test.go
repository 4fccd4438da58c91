package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// connectUDPBootstrap has a UDP listener "udp" whose udp_proxy tunnels
// each session over CONNECT-UDP (HTTP/2, cluster tun) to the HTTP
// listener "cu" of the same proxy on httpPort, which terminates
// CONNECT-UDP requests for targets in domains (route connect_config) and
// relays their datagrams to cluster echo, a UDP host on echoPort.
func connectUDPBootstrap(httpPort, echoPort int, domains string) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s, %s]
  listeners:
  - name: udp
    address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: UDP}}
    listener_filters:
    - name: envoy.filters.udp_listener.udp_proxy
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig, stat_prefix: front, %s}
  - name: cu
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: cu
          http2_protocol_options: {allow_connect: true}
          upgrade_configs: [{upgrade_type: CONNECT-UDP}]
          access_log: [%s]
          http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
          route_config:
            virtual_hosts:
            - name: targets
              domains: [%s]
              routes: [{match: {prefix: /}, route: {cluster: echo, upgrade_configs: [{upgrade_type: CONNECT-UDP, connect_config: {}}]}}]
`, tunnelCluster("tun", httpPort), tcpCluster("echo", echoPort),
		tunnelProxy(echoPort, ", buffer_options: {}", ", idle_timeout: 1s"), httpPort,
		stdoutLog("CUDP %REQ(:METHOD)% %REQ(:AUTHORITY)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% %UPSTREAM_HOST%\n"), domains)
}

// connectUDPH1 sends an HTTP/1.1 CONNECT-UDP request (RFC 9298) for path
// to port and returns the connection, its reader, the status line and
// the response's header lines, lower case.
func connectUDPH1(port int, path string) (net.Conn, *bufio.Reader, string, []string) {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: proxy.example\r\nConnection: Upgrade\r\nUpgrade: connect-udp\r\nCapsule-Protocol: ?1\r\n\r\n", path)
	Expect(err).NotTo(HaveOccurred())
	r := bufio.NewReader(c)
	status, err := r.ReadString('\n')
	Expect(err).NotTo(HaveOccurred())
	var headers []string
	for {
		line, err := r.ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		if line == "\r\n" {
			return c, r, strings.TrimSpace(status), headers
		}
		headers = append(headers, strings.ToLower(strings.TrimSpace(line)))
	}
}

// dialH2ConnectUDP opens an h2c connection to port and a CONNECT-UDP
// extended CONNECT (RFC 9298) for path on stream 1, its HEADERS ending
// the stream when headOnly, and reads until the response head. The
// client is the WebSocket one's raw framer (upgrade_h2_test.go).
func dialH2ConnectUDP(port int, path string, headOnly bool) *h2WSClient {
	GinkgoHelper()
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := &h2WSClient{nc: nc, fr: http2.NewFramer(nc, nc), dec: hpack.NewDecoder(4096, nil), settings: map[http2.SettingID]uint32{}}
	_, err = nc.Write([]byte(http2.ClientPreface))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.fr.WriteSettings()).To(Succeed())
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, f := range [][2]string{
		{":method", "CONNECT"}, {":protocol", "connect-udp"}, {":scheme", "https"},
		{":authority", "proxy.example"}, {":path", path}, {"capsule-protocol", "?1"},
	} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	Expect(c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true, EndStream: headOnly})).To(Succeed())
	for i := 0; c.status == "" && !c.ended; i++ {
		Expect(i).To(BeNumerically("<", 100), "no response head")
		c.readFrame()
	}
	return c
}

var _ = Describe("CONNECT-UDP termination (route connect_config, envoy.upstreams.http.udp)", func() {
	It("answers an HTTP/2 extended CONNECT 200 and relays capsules; one whose HEADERS end the stream gets 400", func() {
		echo := startUDPEcho("E")
		httpPort := freePort()
		s := Start(newDir(), connectUDPBootstrap(httpPort, echo, `"*"`))
		c := dialH2ConnectUDP(httpPort, fmt.Sprintf("/.well-known/masque/udp/127.0.0.1/%d/", echo), false)
		Expect(c.status).To(Equal("200"))
		Expect(c.ended).To(BeFalse())
		Expect(c.fr.WriteData(1, false, append(capsule("a"), capsule("bc")...))).To(Succeed())
		want := append(capsule("E:a"), capsule("E:bc")...)
		for i := 0; len(c.in) < len(want); i++ {
			Expect(i).To(BeNumerically("<", 100), "no capsules")
			Expect(c.ended).To(BeFalse(), "the stream ended")
			c.readFrame()
		}
		Expect(c.in).To(Equal(want))

		h := dialH2ConnectUDP(httpPort, fmt.Sprintf("/.well-known/masque/udp/127.0.0.1/%d/", echo), true)
		Expect(h.status).To(Equal("400"))
		Expect(statValue(s, "cluster.echo.upstream_rq_400")).To(Equal("1"))
	})

	It("carries a UDP client's datagrams through Outrigger's own CONNECT-UDP tunnel and terminator to a UDP server and back", func() {
		echo := startUDPEcho("E")
		httpPort := freePort()
		s := Start(newDir(), connectUDPBootstrap(httpPort, echo, `"*"`), "--file-flush-interval-msec", "50")
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")

		Expect(exchange(c, port, "hello")).To(Equal("E:hello"))
		Expect(exchange(c, port, "again")).To(Equal("E:again"))
		// One session, one tunnel, terminated at the HTTP listener: the
		// request's authority is the target from its path.
		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_success")).To(Equal("1"))
		Expect(statValue(s, "http.cu.downstream_cx_upgrades_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.echo.upstream_rq_200")).To(Equal("1"))
		// The tunnel stream ends with the session (the udp_proxy's
		// idle_timeout), and the terminator logs it.
		waitStat(s, "udp.front.idle_timeout", "1")
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("CUDP GET 127.0.0.1:%d 200 via_upstream 127.0.0.1:%d\n", echo, echo)))
		waitStat(s, "http.cu.downstream_cx_upgrades_active", "0")
	})

	It("answers an HTTP/1.1 client 101 with Capsule-Protocol, relays DATAGRAM capsules of context ID 0 and drops the rest", func() {
		echo := startUDPEcho("E")
		httpPort := freePort()
		s := Start(newDir(), connectUDPBootstrap(httpPort, echo, fmt.Sprintf(`"127.0.0.1:%d"`, echo)))
		c, r, status, headers := connectUDPH1(httpPort, fmt.Sprintf("/.well-known/masque/udp/127.0.0.1/%d/", echo))
		Expect(status).To(Equal("HTTP/1.1 101 Switching Protocols"))
		Expect(headers).To(ContainElements("capsule-protocol: ?1", "upgrade: connect-udp", "connection: upgrade"))
		for _, h := range headers {
			Expect(h).NotTo(HavePrefix("content-length"))
			Expect(h).NotTo(HavePrefix("transfer-encoding"))
		}

		// In one write: a DATAGRAM capsule, an unknown capsule type, a
		// DATAGRAM capsule of context ID 5, then another DATAGRAM capsule
		// cut in two writes.
		payload := append(capsule("hi"), 0x21, 0x02, 'z', 'z')
		payload = append(payload, 0x00, 0x03, 0x05, 'q', 'q')
		last := capsule("there")
		_, err := c.Write(append(payload, last[:3]...))
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Write(last[3:])
		Expect(err).NotTo(HaveOccurred())
		want := append(capsule("E:hi"), capsule("E:there")...)
		got := make([]byte, len(want))
		_, err = io.ReadFull(r, got)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want))
		// Nothing else came from the server: the skipped capsules never
		// reached it.
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = r.ReadByte()
		Expect(err).To(HaveOccurred())
		Expect(statValue(s, "cluster.echo.upstream_rq_200")).To(Equal("1"))

		// A DATAGRAM capsule without a context ID cannot be parsed: the
		// tunnel ends.
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Write([]byte{0x00, 0x00})
		Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadAll(r)
		Expect(err).NotTo(HaveOccurred(), "the connection closes")
		waitStat(s, "http.cu.downstream_cx_upgrades_active", "0")
	})

	It("answers 404 to a path outside the URI template and to a target no virtual host serves", func() {
		echo := startUDPEcho("E")
		httpPort := freePort()
		s := Start(newDir(), connectUDPBootstrap(httpPort, echo, fmt.Sprintf(`"127.0.0.1:%d"`, echo)), "--file-flush-interval-msec", "50")
		for _, path := range []string{
			"/masque/udp/127.0.0.1/1/",
			"/.well-known/masque/udp//1/",
			"/.well-known/masque/udp/127.0.0.1//",
			"/.well-known/masque/udp/fe80::a%25ee1/1/",
		} {
			_, _, status, _ := connectUDPH1(httpPort, path)
			Expect(status).To(Equal("HTTP/1.1 404 Not Found"), path)
		}
		_, _, status, _ := connectUDPH1(httpPort, fmt.Sprintf("/.well-known/masque/udp/127.0.0.2/%d/", echo))
		Expect(status).To(Equal("HTTP/1.1 404 Not Found"))
		Eventually(s.Stdout).Should(ContainSubstring("CUDP GET proxy.example 404 invalid_path -\n"))
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("CUDP GET 127.0.0.2:%d 404 route_not_found -\n", echo)))
		Expect(statValue(s, "cluster.echo.upstream_rq_total")).To(Equal("0"))
	})
})

var _ = Describe("CONNECT-UDP termination through a dynamic forward proxy cluster", func() {
	It("resolves the target of the path through the DNS cache and relays datagrams to it; an unknown name is 503", func() {
		dns := startDNSServer()
		dns.set("echo.test", "127.0.0.1")
		echo := startUDPEcho("E")
		port := freePort()
		cache := dfpCache("masque", dns.port, "")
		listener := fmt.Sprintf(`{name: masque, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
			stat_prefix: masque, upgrade_configs: [{upgrade_type: CONNECT-UDP}],
			http_filters: [{name: envoy.filters.http.dynamic_forward_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig, dns_cache_config: %s}},
				{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
			route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: dfp, upgrade_configs: [{upgrade_type: CONNECT-UDP, connect_config: {}}]}}]}]}}}]}]}`, port, cache)
		s := Start(newDir(), bootstrapOf([]string{listener}, []string{dfpCluster("dfp", cache, "")}))

		c, r, status, _ := connectUDPH1(port, fmt.Sprintf("/.well-known/masque/udp/echo.test/%d/", echo))
		Expect(status).To(Equal("HTTP/1.1 101 Switching Protocols"))
		_, err := c.Write(capsule("ping"))
		Expect(err).NotTo(HaveOccurred())
		want := capsule("E:ping")
		got := make([]byte, len(want))
		_, err = io.ReadFull(r, got)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want))
		Expect(dns.queries.Load()).To(BeNumerically(">=", 1))
		Expect(statValue(s, "dns_cache.masque.dns_query_success")).To(Equal("1"))
		// The HTTP/1.1 client's close ends the tunnel.
		Expect(statValue(s, "http.masque.downstream_cx_upgrades_active")).To(Equal("1"))
		Expect(c.Close()).To(Succeed())
		waitStat(s, "http.masque.downstream_cx_upgrades_active", "0")

		_, _, status, _ = connectUDPH1(port, fmt.Sprintf("/.well-known/masque/udp/nowhere.test/%d/", echo))
		Expect(status).To(HavePrefix("HTTP/1.1 503"))
	})
})
