package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// proxyV1 is a PROXY protocol v1 line from src to dst.
func proxyV1(src, dst string) []byte {
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	family := "TCP4"
	if s.Addr().Is6() {
		family = "TCP6"
	}
	return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", family, s.Addr(), d.Addr(), s.Port(), d.Port())
}

// proxyV2 is a PROXY protocol v2 header (command PROXY, TCP) from src to
// dst, followed by the TLVs given (raw bytes).
func proxyV2(src, dst string, tlvs ...byte) []byte {
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	b := []byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x00")
	if s.Addr().Is6() {
		b[13] = 0x21
	}
	b = append(b, s.Addr().AsSlice()...)
	b = append(b, d.Addr().AsSlice()...)
	b = binary.BigEndian.AppendUint16(b, s.Port())
	b = binary.BigEndian.AppendUint16(b, d.Port())
	b = append(b, tlvs...)
	binary.BigEndian.PutUint16(b[14:16], uint16(len(b)-16))
	return b
}

// proxyV2Local is a v2 header with the LOCAL command (a balancer's own
// health check): the connection's addresses stay.
func proxyV2Local() []byte { return []byte("\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00") }

// proxyProtocolFilter is a listener_filters entry (YAML flow) of the
// proxy_protocol filter with the given fields.
func proxyProtocolFilter(fields string) string {
	return `{name: envoy.filters.listener.proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol` +
		map[bool]string{true: ", " + fields, false: ""}[fields != ""] + `}}`
}

// rawHTTP sends head (a PROXY header, or nothing) then a GET / on a new
// connection and returns the response's status and JSON body.
func rawHTTP(port int, head []byte) (int, map[string]string) {
	GinkgoHelper()
	c := dialTCP(port)
	defer c.Close()
	_, err := c.Write(append(head, "GET / HTTP/1.1\r\nHost: pp\r\nConnection: close\r\n\r\n"...))
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var got map[string]string
	Expect(json.NewDecoder(resp.Body).Decode(&got)).To(Succeed())
	return resp.StatusCode, got
}

// expectClosed checks that the proxy closes c without sending anything.
func expectClosed(c net.Conn) {
	GinkgoHelper()
	Expect(c.SetReadDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	n, err := c.Read(make([]byte, 64))
	Expect(n).To(BeZero())
	Expect(err).To(HaveOccurred())
	Expect(err.Error()).NotTo(ContainSubstring("timeout"), "the connection stayed open")
}

// bannerEcho writes banner, then echoes what it reads.
func bannerEcho(banner string) func(c *net.TCPConn) {
	return func(c *net.TCPConn) {
		_, _ = c.Write([]byte(banner))
		echo(c)
	}
}

var _ = Describe("Listener filters: proxy_protocol", func() {
	It("restores the PROXY protocol's client address for x-forwarded-for and the access log, v1 and v2, and consumes only the header", func() {
		up := headerEchoUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{listener_filters: [` + proxyProtocolFilter("") + `]}`,
			HCM: `{use_remote_address: true, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, ` +
				`log_format: {text_format_source: {inline_string: "PPLOG %DOWNSTREAM_REMOTE_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS%\n"}}}}]}`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "--file-flush-interval-msec", "50")

		status, got := rawHTTP(port, proxyV1("203.0.113.7:51000", "198.51.100.1:443"))
		Expect(status).To(Equal(200))
		Expect(got["X-Forwarded-For"]).To(Equal("203.0.113.7"))
		Eventually(s.Stdout).Should(ContainSubstring("PPLOG 203.0.113.7:51000 198.51.100.1:443\n"))

		// v2 over IPv6, with a TLV the filter skips.
		status, got = rawHTTP(port, proxyV2("[2001:db8::7]:40000", "[2001:db8::1]:80", 0x04, 0x00, 0x02, 'n', 'o'))
		Expect(status).To(Equal(200))
		Expect(got["X-Forwarded-For"]).To(Equal("2001:db8::7"))
		Eventually(s.Stdout).Should(ContainSubstring("PPLOG [2001:db8::7]:40000 [2001:db8::1]:80\n"))

		// LOCAL: the balancer's own connection keeps the real addresses.
		status, got = rawHTTP(port, proxyV2Local())
		Expect(status).To(Equal(200))
		Expect(got["X-Forwarded-For"]).To(Equal("127.0.0.1"))

		Expect(statValue(s, "proxy_proto.versions.v1.found")).To(Equal("1"))
		Expect(statValue(s, "proxy_proto.versions.v2.found")).To(Equal("2"))
		Expect(statValue(s, "proxy_proto.not_found_disallowed")).To(Equal("0"))
		Expect(statValue(s, "listener.127.0.0.1_"+fmt.Sprint(port)+".downstream_pre_cx_active")).To(Equal("0"))
	})

	It("chooses the filter chain by the PROXY protocol's source address, and hands tcp_proxy the bytes after the header", func() {
		inside := startTCPServer(bannerEcho("inside\n"))
		outside := startTCPServer(bannerEcho("outside\n"))
		port := freePort()
		tcpChain := func(cluster, match string) string {
			m := ""
			if match != "" {
				m = "filter_chain_match: " + match + ", "
			}
			return `{` + m + `filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, ` +
				`stat_prefix: ` + cluster + `, cluster: ` + cluster + `, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, ` +
				`log_format: {text_format_source: {inline_string: "TCPPP %UPSTREAM_CLUSTER% %DOWNSTREAM_REMOTE_ADDRESS%\n"}}}}]}}]}`
		}
		cfg := listenersBootstrap(listenerDef{
			Name: "pp", Port: port,
			Fields: "listener_filters: [" + proxyProtocolFilter("") + "]",
			Chains: []string{tcpChain("inside", "{source_prefix_ranges: [{address_prefix: 203.0.113.0, prefix_len: 24}]}"), tcpChain("outside", "")},
		}) + "  clusters: [" + tcpCluster("inside", inside) + ", " + tcpCluster("outside", outside) + "]\n"
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")

		talk := func(head []byte) string {
			GinkgoHelper()
			c := dialTCP(port)
			_, err := c.Write(append(head, "ping"...))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.CloseWrite()).To(Succeed())
			got, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			return string(got)
		}
		Expect(talk(proxyV2("203.0.113.7:5000", "127.0.0.1:80"))).To(Equal("inside\nping"))
		Expect(talk(proxyV1("192.0.2.9:6000", "127.0.0.1:80"))).To(Equal("outside\nping"))
		Eventually(s.Stdout).Should(And(ContainSubstring("TCPPP inside 203.0.113.7:5000\n"), ContainSubstring("TCPPP outside 192.0.2.9:6000\n")))
	})

	It("puts the TLVs its rules name in the connection's dynamic metadata, which tcp_proxy's access log shows, and refuses a malformed TLV", func() {
		up := startTCPServer(bannerEcho("up\n"))
		port := freePort()
		rules := `rules: [{tlv_type: 0xE0, on_tlv_present: {key: tenant}}, {tlv_type: 0xE1, on_tlv_present: {metadata_namespace: acme, key: raw, value_string_encoding: BASE64}}]`
		cfg := listenersBootstrap(listenerDef{
			Name: "pp", Port: port,
			Fields: "listener_filters: [" + proxyProtocolFilter(rules) + "]",
			Chains: []string{`{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, ` +
				`stat_prefix: up, cluster: up, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, ` +
				`log_format: {text_format_source: {inline_string: "TLVLOG %DOWNSTREAM_REMOTE_ADDRESS% %DYNAMIC_METADATA(envoy.filters.listener.proxy_protocol:tenant)% %DYNAMIC_METADATA(acme:raw)%\n"}}}}]}}]}`},
		}) + "  clusters: [" + tcpCluster("up", up) + "]\n"
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")

		tlv := func(t byte, v string) []byte { return append([]byte{t, 0, byte(len(v))}, v...) }
		tlvs := append(append(append(tlv(0xE0, "blue"), tlv(0x05, "skipped")...), tlv(0xE1, "\x00\xff")...), tlv(0xE0, "second")...)
		c := dialTCP(port)
		_, err := c.Write(append(proxyV2("203.0.113.7:5000", "127.0.0.1:80", tlvs...), "ping"...))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("up\nping"))
		Eventually(s.Stdout).Should(ContainSubstring("TLVLOG 203.0.113.7:5000 blue AP8=\n"))

		// A TLV whose length runs past the header: the connection is closed
		// and counted as a v2 error.
		bad := dialTCP(port)
		defer bad.Close()
		_, err = bad.Write(proxyV2("203.0.113.7:5000", "127.0.0.1:80", 0xE0, 0x00, 0x09, 'x'))
		Expect(err).NotTo(HaveOccurred())
		expectClosed(bad)
		Eventually(func() string { return statValue(s, "proxy_proto.versions.v2.error") }).Should(Equal("1"))
		Expect(statValue(s, "downstream_cx_proxy_proto_error")).To(Equal("1"))
		Expect(statValue(s, "proxy_proto.versions.v2.found")).To(Equal("1"))
	})

	It("closes connections without a valid header, or that send nothing before listener_filters_timeout, and counts them", func() {
		port := freePort()
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name: "pp", Port: port, Fields: "stat_prefix: pp, listener_filters_timeout: 0.5s, listener_filters: [" +
				proxyProtocolFilter("stat_prefix: edge, disallowed_versions: [V1]") + "]",
			Chains: []string{directChain("served", "")},
		}))
		send := func(b []byte) net.Conn {
			GinkgoHelper()
			c := dialTCP(port)
			if b != nil {
				_, err := c.Write(b)
				Expect(err).NotTo(HaveOccurred())
			}
			return c
		}
		expectClosed(send([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")))
		expectClosed(send(proxyV1("203.0.113.7:1", "198.51.100.1:2")))
		expectClosed(send([]byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x04\x01\x02\x03\x04")))
		expectClosed(send(nil)) // silent: the timeout
		c := send([]byte("\r\n\r\n\x00"))
		Expect(c.(*net.TCPConn).CloseWrite()).To(Succeed())
		expectClosed(c)

		Eventually(func() string { return statValue(s, "listener.pp.downstream_listener_filter_remote_close") }).Should(Equal("1"))
		Expect(statValue(s, "proxy_proto.edge.not_found_disallowed")).To(Equal("1"))
		Expect(statValue(s, "proxy_proto.edge.versions.v1.found")).To(Equal("1"))
		Expect(statValue(s, "proxy_proto.edge.versions.v1.disallowed")).To(Equal("1"))
		Expect(statValue(s, "proxy_proto.edge.versions.v2.error")).To(Equal("1"))
		Expect(statValue(s, "downstream_cx_proxy_proto_error")).To(Equal("2"))
		Expect(statValue(s, "listener.pp.downstream_pre_cx_timeout")).To(Equal("1"))
		Expect(statValue(s, "listener.pp.downstream_pre_cx_active")).To(Equal("0"))
		Expect(statValue(s, "listener.pp.downstream_cx_total")).To(Equal("0"))
		Expect(statValue(s, "listener.pp.downstream_listener_filter_error")).To(Equal("0"))

		// A valid v2 header is still served.
		c = send(append(proxyV2("203.0.113.7:1", "198.51.100.1:2"), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"...))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200))
	})

	It("lets connections without a header through with allow_requests_without_proxy_protocol, and after the timeout with continue_on_listener_filters_timeout", func() {
		up := headerEchoUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{stat_prefix: pp, listener_filters: [` + proxyProtocolFilter("allow_requests_without_proxy_protocol: true") + `]}`,
			HCM:      `{use_remote_address: true}`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		_, got := rawHTTP(port, nil)
		Expect(got["X-Forwarded-For"]).To(Equal("127.0.0.1"))
		_, got = rawHTTP(port, proxyV1("203.0.113.7:51000", "198.51.100.1:443"))
		Expect(got["X-Forwarded-For"]).To(Equal("203.0.113.7"))
		Expect(statValue(s, "proxy_proto.not_found_allowed")).To(Equal("1"))
		Expect(statValue(s, "proxy_proto.versions.v1.found")).To(Equal("1"))

		port2 := freePort()
		s2 := Start(newDir(), proxySpec{
			Port:     port2,
			Listener: `{stat_prefix: late, listener_filters_timeout: 0.3s, continue_on_listener_filters_timeout: true, listener_filters: [` + proxyProtocolFilter("") + `]}`,
			HCM:      `{use_remote_address: true}`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		c := dialTCP(port2)
		Eventually(func() string { return statValue(s2, "listener.late.downstream_pre_cx_timeout") }).Should(Equal("1"))
		_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: pp\r\nConnection: close\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200))
	})

	It("refuses what it does not implement, with the field's path", func() {
		cfg := func(filters string) string {
			return listenersBootstrap(listenerDef{Name: "pp", Port: freePort(), Fields: "listener_filters: [" + filters + "]", Chains: []string{directChain("x", "")}})
		}
		r, _ := validate("b.yaml", cfg(proxyProtocolFilter("tlv_location: FILTER_STATE")+
			`, {name: envoy.filters.listener.original_src, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.original_src.v3.OriginalSrc, bind_port: true}}`))
		Expect(r.ExitCode).To(Equal(1))
		const lf = "static_resources.listeners[0].listener_filters"
		Expect(r.Stderr).To(And(
			ContainSubstring(lf+"[0].typed_config.tlv_location: FILTER_STATE is not supported by Outrigger (supported: DYNAMIC_METADATA)"),
			ContainSubstring(lf+"[1].typed_config.bind_port: not supported by Outrigger"),
		))
		r, _ = validate("b.yaml", cfg(proxyProtocolFilter("disallowed_versions: [V1, V2]")))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(lf + "[0].typed_config.disallowed_versions: Proxy Protocol filter is misconfigured: all proxy protocol versions are disallowed"))
		r, _ = validate("b.yaml", cfg(`{name: envoy.filters.listener.local_ratelimit}`))
		Expect(r.ExitCode).To(Equal(1))
		// Found by its name with an empty configuration, as Envoy does, which lacks its token bucket.
		Expect(r.Stderr).To(ContainSubstring(lf + `[0].typed_config.token_bucket: required`))
		r, _ = validate("b.yaml", cfg(proxyProtocolFilter("")+`, {name: envoy.filters.listener.original_dst}`))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})

var _ = Describe("Listener filters: original_dst", func() {
	It("leaves the local address of a connection nothing redirected, for the chain match and the access log", func() {
		port := freePort()
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name: "od", Port: port,
			Fields: `listener_filters: [{name: envoy.filters.listener.original_dst, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst}}]`,
			Chains: []string{strings.Replace(directChain("by-port", fmt.Sprintf("{destination_port: %d}", port)),
				`stat_prefix: "chain_by-port", `,
				`stat_prefix: "chain_by-port", access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, `+
					`log_format: {text_format_source: {inline_string: "ODLOG %DOWNSTREAM_LOCAL_ADDRESS%\n"}}}}], `, 1)},
		}), "--file-flush-interval-msec", "50")
		resp, err := http.Get(listenerURL(port, "/"))
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).To(Equal("by-port"))
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("ODLOG 127.0.0.1:%d\n", port)))
		Expect(statValue(s, "listener.127.0.0.1_"+fmt.Sprint(port)+".no_filter_chain_match")).To(Equal("0"))
	})
})
