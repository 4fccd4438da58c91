package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// proxyHeaderEcho reads the PROXY protocol header a connection starts
// with, writes back what it says on one line ("PROXY TCP4 ..." for v1,
// "V2 PROXY <src> <dst> tlvs=<hex>" or "V2 LOCAL" for v2), then echoes.
func proxyHeaderEcho(c *net.TCPConn) {
	r := bufio.NewReader(c)
	sig, err := r.Peek(12)
	if err != nil {
		return
	}
	var line string
	if string(sig) == "\r\n\r\n\x00\r\nQUIT\n" {
		fixed := make([]byte, 16)
		if _, err := io.ReadFull(r, fixed); err != nil {
			return
		}
		block := make([]byte, binary.BigEndian.Uint16(fixed[14:]))
		if _, err := io.ReadFull(r, block); err != nil {
			return
		}
		switch {
		case fixed[12] == 0x20:
			line = "V2 LOCAL"
		case fixed[13] == 0x11 && len(block) >= 12:
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte(block[0:4])), binary.BigEndian.Uint16(block[8:10]))
			dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte(block[4:8])), binary.BigEndian.Uint16(block[10:12]))
			line = fmt.Sprintf("V2 PROXY %s %s tlvs=%s", src, dst, hex.EncodeToString(block[12:]))
		default:
			line = fmt.Sprintf("V2 unexpected %x", fixed[12:14])
		}
	} else {
		l, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(l, "\r\n")
	}
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return
	}
	_, _ = io.Copy(c, r)
	_ = c.CloseWrite()
}

var _ = Describe("Upstream PROXY protocol transport socket", func() {
	It("starts each upstream connection with a v1 or v2 header carrying the downstream's addresses (restored by the proxy_protocol listener filter) and the added TLVs", func() {
		up := startTCPServer(proxyHeaderEcho)
		restored, direct := freePort(), freePort()
		chain := func(cluster string) string {
			return `{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: ` + cluster + `, cluster: ` + cluster + `}}]}`
		}
		ppCluster := func(name, config string) string {
			return strings.TrimSuffix(tcpCluster(name, up), "}") + `, transport_socket: {name: envoy.transport_sockets.upstream_proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport, ` +
				`config: ` + config + `, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}}`
		}
		cfg := listenersBootstrap(
			listenerDef{Name: "restored", Port: restored, Fields: "listener_filters: [" + proxyProtocolFilter("") + "]", Chains: []string{chain("ppv1")}},
			listenerDef{Name: "direct", Port: direct, Chains: []string{chain("ppv2")}},
		) + "  clusters: [" + ppCluster("ppv1", "{version: V1}") + ", " + ppCluster("ppv2", `{version: V2, added_tlvs: [{type: 0xE5, value: YWRkZWQ=}]}`) + "]\n"
		s := Start(newDir(), cfg)

		talk := func(port int, head []byte) (string, net.Addr) {
			GinkgoHelper()
			c := dialTCP(port)
			defer c.Close()
			_, err := c.Write(append(head, "ping"...))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.CloseWrite()).To(Succeed())
			got, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			return string(got), c.LocalAddr()
		}
		got, _ := talk(restored, proxyV2("203.0.113.7:5000", "198.51.100.1:443"))
		Expect(got).To(Equal("PROXY TCP4 203.0.113.7 198.51.100.1 5000 443\nping"))

		got, client := talk(direct, nil)
		Expect(got).To(Equal(fmt.Sprintf("V2 PROXY %s 127.0.0.1:%d tlvs=%s\nping", client, direct, hex.EncodeToString([]byte("\xe5\x00\x05added")))))

		Expect(statValue(s, "cluster.ppv2.upstream.proxyprotocol.v2_tlvs_exceed_max_length")).To(Equal("0"))
		Expect(statValue(s, "cluster.ppv2.upstream_cx_total")).To(Equal("1"))
	})

	It("refuses what it does not implement, with the field's path", func() {
		cluster := `{name: c, connect_timeout: 1s, transport_socket: {name: envoy.transport_sockets.upstream_proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport, ` +
			`config: {version: V2, pass_through_tlvs: {match_type: INCLUDE_ALL}}, allow_unspecified_address: true, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}}`
		r, _ := validate("b.yaml", "static_resources: {clusters: ["+cluster+"]}\n")
		Expect(r.ExitCode).To(Equal(1))
		const ts = "static_resources.clusters[0].transport_socket.typed_config"
		Expect(r.Stderr).To(And(
			ContainSubstring(ts+".config.pass_through_tlvs: not supported by Outrigger"),
			ContainSubstring(ts+".allow_unspecified_address: not supported by Outrigger"),
		))
	})
})
