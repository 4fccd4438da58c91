package e2e

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tunnelCluster is an HTTP/2 (prior knowledge) cluster of one host.
func tunnelCluster(name string, port int) string {
	return strings.Replace(tcpCluster(name, port), "connect_timeout: 1s",
		`connect_timeout: 1s, typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http2_protocol_options: {}}}}`, 1)
}

// tunnelProxy is a udp_proxy to cluster tun over CONNECT-UDP to
// 127.0.0.1:<target>, datagrams as capsules (http_capsule), with extra
// tunneling_config fields and extra udp_proxy fields.
func tunnelProxy(target int, tunnelFields, proxyFields string) string {
	f := udpRoute("tun") +
		`, session_filters: [{name: envoy.filters.udp.session.http_capsule, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.http_capsule.v3.FilterConfig}}]` +
		fmt.Sprintf(`, tunneling_config: {proxy_host: proxy.example, target_host: 127.0.0.1, default_target_port: %d%s}`, target, tunnelFields)
	return f + proxyFields
}

var _ = Describe("UDP proxy tunneling_config (CONNECT-UDP over HTTP/2)", func() {
	It("sends a session's datagrams as capsules on an extended CONNECT stream and the proxy's capsules back as datagrams", func() {
		echo := startUDPEcho("E")
		srv := &connectUDPServer{status: "200"}
		up := startConnectUDPServer(srv)
		s := Start(newDir(), udpBootstrap(tunnelProxy(echo,
			`, proxy_port: 8443, buffer_options: {}, headers_to_add: [{header: {key: x-client, value: "%DOWNSTREAM_REMOTE_ADDRESS%"}}]`,
			`, access_log_options: {flush_access_log_on_tunnel_connected: true}`), "", tunnelCluster("tun", up)),
			"--file-flush-interval-msec", "50")
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")

		Expect(exchange(c, port, "hello")).To(Equal("E:hello"))
		Expect(exchange(c, port, "again")).To(Equal("E:again"))
		var req string
		Eventually(srv.requests).Should(Receive(&req))
		Expect(req).To(Equal(fmt.Sprintf("CONNECT connect-udp proxy.example:8443 /.well-known/masque/udp/127.0.0.1/%d/ ?1 %s", echo, c.LocalAddr().String())))
		Consistently(srv.requests, "300ms").ShouldNot(Receive(), "one session, one tunnel")

		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_success")).To(Equal("1"))
		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_failure")).To(Equal("0"))
		Expect(statValue(s, "cluster.tun.udp.sess_rx_datagrams")).To(Equal("2"))
		Expect(statValue(s, "udp.front.downstream_sess_total")).To(Equal("1"))
		Expect(statValue(s, "udp.front.downstream_sess_tx_datagrams")).To(Equal("2"))
		// flush_access_log_on_tunnel_connected logs the session once its
		// tunnel opened.
		Eventually(s.Stdout).Should(MatchRegexp(`UDPLOG tun 127\.0\.0\.1:%d 5 0 %s 1 0 UdpTunnelUpstreamConnected\n`, up, strings.ReplaceAll(c.LocalAddr().String(), ".", `\.`)))
	})

	It("holds datagrams within buffer_options until the tunnel opens", func() {
		echo := startUDPEcho("E")
		srv := &connectUDPServer{status: "200", hold: make(chan struct{})}
		up := startConnectUDPServer(srv)
		s := Start(newDir(), udpBootstrap(tunnelProxy(echo, `, buffer_options: {max_buffered_datagrams: 2}`, ""), "", tunnelCluster("tun", up)))
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")
		for _, m := range []string{"one", "two", "three"} {
			_, err := c.WriteToUDPAddrPort([]byte(m), tunnelTarget(port))
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(srv.requests).Should(Receive())
		waitStat(s, "udp.front.downstream_sess_rx_datagrams", "3")
		// The third did not fit.
		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_buffer_overflow")).To(Equal("1"))
		close(srv.hold)
		Expect(readDatagram(c)).To(Equal("E:one"))
		Expect(readDatagram(c)).To(Equal("E:two"))
		Expect(exchange(c, port, "four")).To(Equal("E:four"))
	})

	It("drops datagrams that come before the tunnel opens without buffer_options", func() {
		echo := startUDPEcho("E")
		srv := &connectUDPServer{status: "200", hold: make(chan struct{})}
		up := startConnectUDPServer(srv)
		s := Start(newDir(), udpBootstrap(tunnelProxy(echo, "", ""), "", tunnelCluster("tun", up)))
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")
		_, err := c.WriteToUDPAddrPort([]byte("early"), tunnelTarget(port))
		Expect(err).NotTo(HaveOccurred())
		Eventually(srv.requests).Should(Receive())
		close(srv.hold)
		waitStat(s, "cluster.tun.udp.sess_tunnel_success", "1")
		Expect(exchange(c, port, "late")).To(Equal("E:late"))
		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_buffer_overflow")).To(Equal("0"))
	})

	It("retries a refused tunnel within retry_options, then ends the session", func() {
		srv := &connectUDPServer{status: "403"}
		up := startConnectUDPServer(srv)
		s := Start(newDir(), udpBootstrap(tunnelProxy(9, `, retry_options: {max_connect_attempts: 2}`, ""), "", tunnelCluster("tun", up)))
		port := listenerPort(s, "udp")
		Expect(unanswered(udpClient("127.0.0.1"), port, "x")).To(BeTrue())
		Eventually(srv.requests).Should(Receive())
		Eventually(srv.requests).Should(Receive())
		waitStat(s, "cluster.tun.udp.sess_tunnel_failure", "1")
		Expect(statValue(s, "cluster.tun.upstream_cx_connect_attempts_exceeded")).To(Equal("1"))
		Expect(statValue(s, "cluster.tun.upstream_rq_retry")).To(Equal("1"))
		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_success")).To(Equal("0"))
		waitStat(s, "udp.front.downstream_sess_active", "0")
		Consistently(srv.requests, "300ms").ShouldNot(Receive(), "two attempts at most")
	})

	It("ends an idle session's tunnel after idle_timeout; the next datagram opens a new one", func() {
		echo := startUDPEcho("E")
		srv := &connectUDPServer{status: "200"}
		up := startConnectUDPServer(srv)
		s := Start(newDir(), udpBootstrap(tunnelProxy(echo, ", buffer_options: {}", ", idle_timeout: 0.5s"), "", tunnelCluster("tun", up)))
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")
		Expect(exchange(c, port, "a")).To(Equal("E:a"))
		Eventually(srv.requests).Should(Receive())
		waitStat(s, "udp.front.idle_timeout", "1")
		waitStat(s, "udp.front.downstream_sess_active", "0")
		// The stream is reset with its session.
		Eventually(srv.resets, "5s").Should(Receive())
		Expect(exchange(c, port, "b")).To(Equal("E:b"))
		Eventually(srv.requests).Should(Receive())
		Expect(statValue(s, "cluster.tun.udp.sess_tunnel_success")).To(Equal("2"))
	})

	It("tunnels over a POST with use_post and keeps the response headers for the access log with propagate_response_headers", func() {
		echo := startUDPEcho("E")
		srv := &connectUDPServer{status: "200", postTarget: echo}
		up := startConnectUDPServer(srv)
		cfg := udpBootstrap(tunnelProxy(1, `, use_post: true, post_path: /udp, buffer_options: {}, propagate_response_headers: true`, ", idle_timeout: 0.5s"), "", tunnelCluster("tun", up))
		// A second access log, beside the fixture's, shows the kept headers.
		cfg = strings.Replace(cfg, "        access_log:\n", "        access_log:\n        - name: envoy.access_loggers.stdout\n          typed_config: {\"@type\": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: {text_format_source: {inline_string: \"TUNHDR %ACCESS_LOG_TYPE% %UPSTREAM_REQUEST_ATTEMPT_COUNT% %FILTER_STATE(envoy.udp_proxy.propagate_response_headers:TYPED)%\\n\"}}}\n", 1)
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")
		Expect(exchange(c, port, "posted")).To(Equal("E:posted"))
		var req string
		Eventually(srv.requests).Should(Receive(&req))
		Expect(req).To(Equal("POST  proxy.example /udp  "), "no :protocol and no capsule-protocol on a POST")
		// The session ends idle and logs the response's headers.
		Eventually(s.Stdout, "10s").Should(ContainSubstring(`TUNHDR UdpSessionEnd 1 {"headers":[{"key":":status","value":"200"},{"key":"capsule-protocol","value":"?1"},{"key":"x-proxy","value":"cudp"}]}`))
	})

	DescribeTable("refuses what Envoy or Outrigger refuses, naming the field",
		func(proxyFields, cluster, want string) {
			r, _ := validate("udp.yaml", udpBootstrap(proxyFields, "", cluster))
			Expect(r.ExitCode).NotTo(Equal(0), r.Stdout+r.Stderr)
			Expect(r.Stdout + r.Stderr).To(ContainSubstring(want))
		},
		Entry("an HTTP/1.1 cluster", tunnelProxy(9, "", ""), tcpCluster("tun", 9), `typed_config.tunneling_config: cluster "tun" does not speak HTTP/2`),
		Entry("per-packet load balancing", tunnelProxy(9, "", ", use_per_packet_load_balancing: true"), tunnelCluster("tun", 9), "tunneling_config: cannot be set with use_per_packet_load_balancing"),
		Entry("a post_path without use_post", tunnelProxy(9, ", post_path: /x", ""), tunnelCluster("tun", 9), "typed_config.tunneling_config.post_path: needs use_post"),
		Entry("no target port", strings.Replace(tunnelProxy(9, "", ""), "default_target_port: 9", "default_target_port: 0", 1), tunnelCluster("tun", 9), "default_target_port"),
	)
})

// tunnelTarget is 127.0.0.1:port.
func tunnelTarget(port int) netip.AddrPort {
	return netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(port))
}
