package e2e

import (
	"bytes"
	"fmt"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The tcp_stats transport socket", func() {
	It("records each upstream connection's TCP_INFO in the cluster's tcp_stats stats", func() {
		up := startTCPServer(echo)
		port := freePort()
		cluster := fmt.Sprintf(`{name: echo, connect_timeout: 2s,
  transport_socket: {name: envoy.transport_sockets.tcp_stats, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tcp_stats.v3.Config, update_period: 0.1s,
    transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}},
  load_assignment: {cluster_name: echo, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}`, up)
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo", cluster))

		msg := bytes.Repeat([]byte("segments"), 1<<13) // 64 KiB
		expectStreamEcho(dialTCP(port), msg)
		Eventually(func() string { return statValue(s, "cluster.echo.upstream_cx_active") }).Should(Equal("0"))
		n := len(msg)
		for _, name := range []string{"cx_tx_bytes_sent", "cx_rx_bytes_received"} {
			// The FIN counts as one byte once the peer has seen it.
			v, err := strconv.Atoi(statValue(s, "cluster.echo.tcp_stats."+name))
			Expect(err).NotTo(HaveOccurred(), name)
			Expect(v).To(BeNumerically(">=", n), name)
			Expect(v).To(BeNumerically("<=", n+1), name)
		}
		for _, name := range []string{"cx_tx_segments", "cx_rx_segments", "cx_tx_data_segments", "cx_rx_data_segments"} {
			Expect(statValue(s, "cluster.echo.tcp_stats."+name)).NotTo(Equal("0"), name)
		}
		Expect(statValue(s, "cluster.echo.tcp_stats.cx_tx_unsent_bytes")).To(Equal("0"))
		Expect(statValue(s, "cluster.echo.tcp_stats.cx_tx_unacked_segments")).To(Equal("0"))
		prom := s.Get("/stats/prometheus").Body
		Expect(prom).To(ContainSubstring("# HELP proxy_cluster_tcp_stats_cx_tx_segments Segments"))
		Expect(prom).To(ContainSubstring(`proxy_cluster_tcp_stats_cx_rtt_us_count{proxy_cluster_name="echo"}`))
	})

	It("records each downstream connection's TCP_INFO in the listener's tcp_stats stats", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - transport_socket: {name: envoy.transport_sockets.tcp_stats, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tcp_stats.v3.Config,
        transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}
      filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: front, cluster: echo}}]
`, tcpCluster("echo", up), port))

		msg := bytes.Repeat([]byte("downstream"), 1<<12)
		c := dialTCP(port)
		expectStreamEcho(c, msg)
		Expect(c.Close()).To(Succeed())
		prefix := fmt.Sprintf("listener.127.0.0.1_%d.tcp_stats.", port)
		Eventually(func() string { return statValue(s, prefix+"cx_tx_bytes_sent") }).ShouldNot(Equal("0"))
		for _, name := range []string{"cx_tx_bytes_sent", "cx_rx_bytes_received"} {
			v, err := strconv.Atoi(statValue(s, prefix+name))
			Expect(err).NotTo(HaveOccurred(), name)
			Expect(v).To(BeNumerically(">=", len(msg)), name)
			Expect(v).To(BeNumerically("<=", len(msg)+1), name)
		}
		Expect(statValue(s, prefix+"cx_tx_unsent_bytes")).To(Equal("0"))
		Expect(s.Get("/stats/prometheus").Body).To(ContainSubstring("# HELP proxy_listener_tcp_stats_cx_tx_segments Segments"))
	})
})
