package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// proxyHeaderEcho reads the PROXY protocol header a connection starts
// with, writes back what it says on one line, then echoes.
func proxyHeaderEcho(c *net.TCPConn) {
	r := bufio.NewReader(c)
	line, ok := readProxyHeader(r)
	if !ok {
		return
	}
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return
	}
	_, _ = io.Copy(c, r)
	_ = c.CloseWrite()
}

// proxyHeaderHTTP reads the PROXY protocol header a connection starts
// with, then answers each HTTP/1.1 request on it with what the header
// said and the connection's request count.
func proxyHeaderHTTP(c *net.TCPConn) {
	r := bufio.NewReader(c)
	line, ok := readProxyHeader(r)
	if !ok {
		return
	}
	for n := 1; ; n++ {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		body := fmt.Sprintf("%s #%d", line, n)
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			return
		}
	}
}

// readProxyHeader reads a PROXY protocol header and says what it holds on
// one line: "PROXY TCP4 ..." for v1, "V2 PROXY <src> <dst> tlvs=<hex>",
// "V2 PROXY UNSPEC tlvs=<hex>" or "V2 LOCAL" for v2.
func readProxyHeader(r *bufio.Reader) (string, bool) {
	sig, err := r.Peek(12)
	if err != nil {
		return "", false
	}
	var line string
	if string(sig) == "\r\n\r\n\x00\r\nQUIT\n" {
		fixed := make([]byte, 16)
		if _, err := io.ReadFull(r, fixed); err != nil {
			return "", false
		}
		block := make([]byte, binary.BigEndian.Uint16(fixed[14:]))
		if _, err := io.ReadFull(r, block); err != nil {
			return "", false
		}
		switch {
		case fixed[12] == 0x20:
			line = "V2 LOCAL"
		case fixed[12] == 0x21 && fixed[13] == 0x00:
			line = "V2 PROXY UNSPEC tlvs=" + hex.EncodeToString(block)
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
			return "", false
		}
		line = strings.TrimSuffix(l, "\r\n")
	}
	return line, true
}

// pingThrough sends head (a PROXY header, or none) and "ping" on a new
// connection to port, half-closes it and returns all it gets back, with
// the connection's local address.
func pingThrough(port int, head []byte) (string, net.Addr) {
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

var _ = Describe("Upstream PROXY protocol transport socket", func() {
	It("starts each upstream connection with a v1 or v2 header carrying the downstream's addresses (restored by the proxy_protocol listener filter) and the added TLVs", func() {
		up := startTCPServer(proxyHeaderEcho)
		restored, direct, passed := freePort(), freePort(), freePort()
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
			listenerDef{Name: "passed", Port: passed, Fields: "listener_filters: [" + proxyProtocolFilter("pass_through_tlvs: {match_type: INCLUDE, tlv_type: [0xE0, 0xE1]}") + "]", Chains: []string{chain("pass")}},
		) + "  clusters: [" + ppCluster("ppv1", "{version: V1}") + ", " + ppCluster("ppv2", `{version: V2, added_tlvs: [{type: 0xE5, value: YWRkZWQ=}]}`) +
			", " + ppCluster("pass", `{version: V2, pass_through_tlvs: {match_type: INCLUDE, tlv_type: [0xE0, 0x05]}, added_tlvs: [{type: 0xE5, value: YWRkZWQ=}]}`) + "]\n"
		s := Start(newDir(), cfg)

		got, _ := pingThrough(restored, proxyV2("203.0.113.7:5000", "198.51.100.1:443"))
		Expect(got).To(Equal("PROXY TCP4 203.0.113.7 198.51.100.1 5000 443\nping"))

		got, client := pingThrough(direct, nil)
		Expect(got).To(Equal(fmt.Sprintf("V2 PROXY %s 127.0.0.1:%d tlvs=%s\nping", client, direct, hex.EncodeToString([]byte("\xe5\x00\x05added")))))

		// The listener keeps 0xE0 and 0xE1, the cluster passes on 0xE0 and
		// 0x05: only 0xE0 reaches the upstream, before the added TLV.
		tlvs := []byte("\xe0\x00\x04blue\x05\x00\x02id\xe1\x00\x01x")
		got, _ = pingThrough(passed, proxyV2("203.0.113.9:6000", "198.51.100.2:8443", tlvs...))
		Expect(got).To(Equal("V2 PROXY 203.0.113.9:6000 198.51.100.2:8443 tlvs=" + hex.EncodeToString([]byte("\xe0\x00\x04blue\xe5\x00\x05added")) + "\nping"))

		Expect(statValue(s, "cluster.ppv2.upstream.proxyprotocol.v2_tlvs_exceed_max_length")).To(Equal("0"))
		Expect(statValue(s, "cluster.ppv2.upstream_cx_total")).To(Equal("1"))
	})

	It("gives HTTP requests of a connection with a PROXY header connections of their own, whose header carries it", func() {
		up := startTCPServer(proxyHeaderHTTP)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{listener_filters: [` + proxyProtocolFilter("allow_requests_without_proxy_protocol: true") + `]}`,
			Clusters: []proxyCluster{{Name: "up", Port: up, Extra: `transport_socket: {name: envoy.transport_sockets.upstream_proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport, ` +
				`config: {version: V1}, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}`}},
		}.YAML())

		get := func(head []byte) string {
			GinkgoHelper()
			c := dialTCP(port)
			defer c.Close()
			_, err := c.Write(append(head, "GET / HTTP/1.1\r\nHost: pp\r\nConnection: close\r\n\r\n"...))
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			// The proxy gives its upstream connection back to the pool
			// just after the client has the response: the next request
			// must find it there.
			Eventually(func() string { return statValue(s, "cluster.up.upstream_rq_active") }).Should(Equal("0"))
			return string(b)
		}
		Expect(get(proxyV1("203.0.113.7:51000", "198.51.100.1:80"))).To(Equal("PROXY TCP4 203.0.113.7 198.51.100.1 51000 80 #1"))
		// Another client: a connection of its own.
		Expect(get(proxyV1("203.0.113.8:52000", "198.51.100.1:80"))).To(Equal("PROXY TCP4 203.0.113.8 198.51.100.1 52000 80 #1"))
		// The first client again: its pooled connection.
		Expect(get(proxyV1("203.0.113.7:51000", "198.51.100.1:80"))).To(Equal("PROXY TCP4 203.0.113.7 198.51.100.1 51000 80 #2"))
		// No PROXY header downstream: the header describes the downstream
		// connection (client to listener), which Envoy's connection
		// manager adds to the connection's state
		// (add_proxy_protocol_connection_state, true by default).
		Expect(get(nil)).To(MatchRegexp(`^PROXY TCP4 127\.0\.0\.1 127\.0\.0\.1 \d+ ` + fmt.Sprint(port) + ` #1$`))
		Expect(statValue(s, "cluster.up.upstream_cx_total")).To(Equal("3"))
	})

	It("refuses an added TLV with both a value and a format string, or neither, with the field's path", func() {
		cluster := `{name: c, connect_timeout: 1s, transport_socket: {name: envoy.transport_sockets.upstream_proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport, ` +
			`config: {version: V2, added_tlvs: [{type: 1, value: eA==, format_string: {text_format_source: {inline_string: x}}}, {type: 2}]}, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}}`
		r, _ := validate("b.yaml", "static_resources: {clusters: ["+cluster+"]}\n")
		Expect(r.ExitCode).To(Equal(1))
		const ts = "static_resources.clusters[0].transport_socket.typed_config"
		Expect(r.Stderr).To(And(
			ContainSubstring(ts+".config.added_tlvs[0]: only one of value and format_string may be set"),
			ContainSubstring(ts+".config.added_tlvs[1]: one of value and format_string must be set"),
		))
	})
})
