package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// connectThrough sends head (a PROXY header, or none) and a CONNECT on a
// new connection to port, expects a 200, then sends "ping", half-closes
// and returns all the tunnel's bytes back.
func connectThrough(port int, head []byte) (string, net.Addr) {
	GinkgoHelper()
	c := dialTCP(port)
	defer c.Close()
	_, err := c.Write(append(head, "CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\n\r\n"...))
	Expect(err).NotTo(HaveOccurred())
	r := bufio.NewReader(c)
	status, err := r.ReadString('\n')
	Expect(err).NotTo(HaveOccurred())
	Expect(status).To(HavePrefix("HTTP/1.1 200 "))
	for {
		line, err := r.ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		if line == "\r\n" {
			break
		}
	}
	_, err = c.Write([]byte("ping"))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.CloseWrite()).To(Succeed())
	got, err := io.ReadAll(r)
	Expect(err).NotTo(HaveOccurred())
	return string(got), c.LocalAddr()
}

var _ = Describe("CONNECT termination proxy_protocol_config", func() {
	It("starts the payload sent upstream with a PROXY header of the downstream connection's addresses", func() {
		up := startTCPServer(proxyHeaderEcho)
		v1, v2 := freePort(), freePort()
		route := func(version string) string {
			return `[{match: {connect_matcher: {}}, route: {cluster: up, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {proxy_protocol_config: {version: ` + version + `}}}]}}]`
		}
		s := Start(newDir(), proxySpec{
			Port: v1, Listener: `{name: v1, listener_filters: [` + proxyProtocolFilter("") + `]}`, Routes: route("V1"),
			Clusters: []proxyCluster{{Name: "up", Port: up}},
			More:     []proxySpec{{Port: v2, Listener: `{name: v2}`, Routes: route("V2")}},
		}.YAML())

		// The addresses the listener filter restored.
		got, _ := connectThrough(v1, proxyV1("203.0.113.7:51000", "198.51.100.1:443"))
		Expect(got).To(Equal("PROXY TCP4 203.0.113.7 198.51.100.1 51000 443\nping"))
		got, client := connectThrough(v2, nil)
		Expect(got).To(Equal(fmt.Sprintf("V2 PROXY %s 127.0.0.1:%d tlvs=\nping", client, v2)))
		Expect(statValue(s, "cluster.up.upstream_cx_total")).To(Equal("2"))
	})

	It("refuses TLV settings, which the header cannot carry, with the field's path", func() {
		cfg := proxySpec{Port: freePort(), Clusters: []proxyCluster{{Name: "up", Port: 1}},
			Routes: `[{match: {connect_matcher: {}}, route: {cluster: up, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {proxy_protocol_config: {version: V2, added_tlvs: [{type: 1, value: eA==}]}}}]}}]`,
		}.YAML()
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("route.upgrade_configs[0].connect_config.proxy_protocol_config.added_tlvs: the PROXY header of a terminated CONNECT carries no TLVs"))
	})
})
