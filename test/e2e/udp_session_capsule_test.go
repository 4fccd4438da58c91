package e2e

import (
	"bytes"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// capsule is an HTTP DATAGRAM capsule (RFC 9297) of a CONNECT-UDP payload
// (context ID 0) shorter than 63 bytes: what the http_capsule session
// filter sends for a datagram, and reads back.
func capsule(payload string) []byte {
	GinkgoHelper()
	Expect(len(payload)).To(BeNumerically("<", 63))
	return append([]byte{0x00, byte(len(payload) + 1), 0x00}, payload...)
}

// startCapsuleUpstream records each datagram it receives on got and
// answers one carrying capsule("x") with capsule("A:x"), the capsule cut
// in two datagrams, then, in one datagram, an unknown capsule type,
// capsule("B:x") and capsule("C:x").
func startCapsuleUpstream(got chan<- []byte) int {
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
			in := append([]byte(nil), buf[:n]...)
			got <- in
			if n < 3 {
				continue
			}
			msg := string(in[3:])
			a := capsule("A:" + msg)
			_, _ = c.WriteToUDPAddrPort(a[:2], from)
			_, _ = c.WriteToUDPAddrPort(a[2:], from)
			rest := append([]byte{0x21, 0x01, 'z'}, capsule("B:"+msg)...)
			_, _ = c.WriteToUDPAddrPort(append(rest, capsule("C:"+msg)...), from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port
}

var _ = Describe("UDP proxy session filters", func() {
	const capsuleFilter = `session_filters: [{name: envoy.filters.udp.session.http_capsule, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.http_capsule.v3.FilterConfig}}]`

	It("sends each datagram upstream as an HTTP capsule and the host's capsules back as datagrams, with http_capsule", func() {
		got := make(chan []byte, 16)
		up := startCapsuleUpstream(got)
		s := Start(newDir(), udpBootstrap(udpRoute("capsules")+", "+capsuleFilter, "", tcpCluster("capsules", up)))
		port := listenerPort(s, "udp")
		c := udpClient("127.0.0.1")

		// The first answer is the capsule the host cut in two.
		Expect(exchange(c, port, "hello")).To(Equal("A:hello"))
		var in []byte
		Eventually(got).Should(Receive(&in))
		Expect(in).To(Equal(capsule("hello")), "the host receives the datagram as a DATAGRAM capsule")
		// Then the two capsules of one datagram, the unknown type dropped.
		Expect(readDatagram(c)).To(Equal("B:hello"))
		Expect(readDatagram(c)).To(Equal("C:hello"))

		Expect(exchange(c, port, "again")).To(Equal("A:again"))
		Eventually(got).Should(Receive(&in))
		Expect(in).To(Equal(capsule("again")))
		Expect(readDatagram(c)).To(Equal("B:again"))
		Expect(readDatagram(c)).To(Equal("C:again"))

		// The cluster counts what it is sent and receives: capsules.
		Eventually(func() string { return statValue(s, "cluster.capsules.udp.sess_tx_datagrams") }).Should(Equal("2"))
		Expect(statValue(s, "cluster.capsules.upstream_cx_tx_bytes_total")).To(Equal("16"))
		Expect(statValue(s, "udp.front.downstream_sess_rx_bytes")).To(Equal("10"))
	})

	It("refuses config_discovery and filters it does not have, with their path", func() {
		const p = "static_resources.listeners[0].listener_filters[0].typed_config.session_filters"
		for fields, want := range map[string]string{
			`session_filters: [{name: dfp, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.dynamic_forward_proxy.v3.FilterConfig, stat_prefix: d}}]`:        p + "[0].typed_config",
			`session_filters: [{name: c, config_discovery: {config_source: {ads: {}}, type_urls: [type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.session.http_capsule.v3.FilterConfig]}}]`: p + "[0].config_discovery",
		} {
			r, _ := validate("udp.yaml", udpBootstrap(udpRoute("echo")+", "+fields, "", tcpCluster("echo", 9)))
			Expect(r.ExitCode).NotTo(Equal(0), r.Stdout+r.Stderr)
			Expect(r.Stdout + r.Stderr).To(ContainSubstring(want))
		}
	})
})

// readDatagram reads c's next datagram, "" when none comes within 5 s.
func readDatagram(c *net.UDPConn) string {
	GinkgoHelper()
	Expect(c.SetReadDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	buf := make([]byte, 65536)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return ""
	}
	return string(bytes.Clone(buf[:n]))
}
