package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// proxyHeaderPingServer starts a TCP server whose connections start with
// a PROXY protocol header followed by "ping", answered with "pong"; seen
// returns what each connection's header said (readProxyHeader's line)
// with the connection's peer address.
func proxyHeaderPingServer() (port int, seen func() []string) {
	GinkgoHelper()
	var mu sync.Mutex
	var lines []string
	port = startTCPServer(func(c *net.TCPConn) {
		r := bufio.NewReader(c)
		line, ok := readProxyHeader(r)
		if !ok {
			return
		}
		mu.Lock()
		lines = append(lines, line+" peer="+c.RemoteAddr().String())
		mu.Unlock()
		ping := make([]byte, 4)
		if _, err := io.ReadFull(r, ping); err != nil || string(ping) != "ping" {
			return
		}
		_, _ = io.WriteString(c, "pong")
	})
	return port, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

var _ = Describe("TCP health check proxy_protocol_config", func() {
	It("starts each check with a v1 header of the check's own addresses, or a v2 LOCAL header, ahead of send", func() {
		v1, seen1 := proxyHeaderPingServer()
		v2, seen2 := proxyHeaderPingServer()
		up := newHCUpstream("a") // the route needs a first cluster
		check := func(version string) string {
			return `{health_checks: [{timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1,
				tcp_health_check: {send: {text: "70696e67"}, receive: [{binary: "cG9uZw=="}], proxy_protocol_config: {version: ` + version + `}}}]}`
		}
		s := Start(newDir(), proxySpec{Port: freePort(), Clusters: []proxyCluster{
			{Name: "web", Port: portNum(up.addr)},
			{Name: "v1", Port: v1, Extra: check("V1")},
			{Name: "v2", Port: v2, Extra: check("V2")},
		}}.YAML())
		s.WaitLive()
		Expect(clusterHostFlags(s, "v1", fmt.Sprintf("127.0.0.1:%d", v1))).To(Equal("healthy"))
		Expect(clusterHostFlags(s, "v2", fmt.Sprintf("127.0.0.1:%d", v2))).To(Equal("healthy"))

		Expect(seen1()).NotTo(BeEmpty())
		for _, l := range seen1() {
			header, peer, _ := strings.Cut(l, " peer=")
			Expect(header).To(Equal(fmt.Sprintf("PROXY TCP4 127.0.0.1 127.0.0.1 %d %d", portNum(peer), v1)))
		}
		Expect(seen2()).NotTo(BeEmpty())
		for _, l := range seen2() {
			Expect(l).To(HavePrefix("V2 LOCAL peer="))
		}
	})

	It("refuses TLV settings, which a check's header cannot carry, with the field's path", func() {
		r, _ := validate("b.yaml", `static_resources: {clusters: [{name: c, connect_timeout: 1s, health_checks: [{timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1,
  tcp_health_check: {proxy_protocol_config: {version: V2, added_tlvs: [{type: 1, value: eA==}]}}}]}]}
`)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].health_checks[0].tcp_health_check.proxy_protocol_config.added_tlvs: a health check's PROXY header carries no TLVs"))
	})
})
