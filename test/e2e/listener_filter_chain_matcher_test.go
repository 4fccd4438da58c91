package e2e

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// dialTCPFrom connects to 127.0.0.1:port from the loopback address src.
func dialTCPFrom(src string, port int) *net.TCPConn {
	GinkgoHelper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	Expect(c.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
	return c.(*net.TCPConn)
}

// tcpChain is a filter chain named name of a tcp_proxy to the cluster of
// that name, with the filter_chain_match match (none when empty).
func tcpChain(name, match string) string {
	if match != "" {
		match = `filter_chain_match: ` + match + `, `
	}
	return `{name: ` + name + `, ` + match + `filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, ` +
		`stat_prefix: ` + name + `, cluster: ` + name + `}}]}`
}

// chainAction is a filter_chain_matcher action naming the chain name.
func chainAction(name string) string {
	return `{action: {name: fc, typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: ` + name + `}}}`
}

// talkFrom sends "ping" to the listener on port from the loopback address
// src, half-closes, and returns what came back.
func talkFrom(port int, src string) string {
	GinkgoHelper()
	c := dialTCPFrom(src, port)
	_, err := c.Write([]byte("ping"))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.CloseWrite()).To(Succeed())
	got, err := io.ReadAll(c)
	Expect(err).NotTo(HaveOccurred())
	return string(got)
}

var _ = Describe("Listener filter_chain_matcher", func() {
	It("chooses the chain its IP matcher names by source address, ignores filter_chain_match, and closes a connection it matches to nothing", func() {
		one := startTCPServer(bannerEcho("one\n"))
		two := startTCPServer(bannerEcho("two\n"))
		port := freePort()
		cfg := listenersBootstrap(listenerDef{
			Name: "fcm", Port: port,
			Fields: `filter_chain_matcher: {matcher_tree: {input: {name: src, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput}}, ` +
				`custom_match: {name: ip, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.IPMatcher, range_matchers: [` +
				`{ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}], on_match: ` + chainAction("one") + `}, ` +
				`{ranges: [{address_prefix: 127.0.0.2, prefix_len: 32}], on_match: ` + chainAction("two") + `}]}}}}`,
			// The matches would send everything to "two": the matcher
			// decides.
			Chains: []string{tcpChain("one", "{destination_port: 1}"), tcpChain("two", "{}")},
		}) + "  clusters: [" + tcpCluster("one", one) + ", " + tcpCluster("two", two) + "]\n"
		s := Start(newDir(), cfg)

		Expect(talkFrom(port, "127.0.0.1")).To(Equal("one\nping"))
		Expect(talkFrom(port, "127.0.0.2")).To(Equal("two\nping"))
		Expect(statValue(s, "listener.127.0.0.1_"+fmt.Sprint(port)+".no_filter_chain_match")).To(Equal("0"))

		expectClosed(dialTCPFrom("127.0.0.3", port))
		Expect(statValue(s, "listener.127.0.0.1_"+fmt.Sprint(port)+".no_filter_chain_match")).To(Equal("1"))
	})

	It("decides with the custom input matchers of a matcher_list: IP ranges with their stats, consistent hashing and a runtime fraction", func() {
		one := startTCPServer(bannerEcho("one\n"))
		two := startTCPServer(bannerEcho("two\n"))
		port := freePort()
		srcIP := `{name: src, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput}}`
		custom := func(typ, fields string) string {
			return `{single_predicate: {input: ` + srcIP + `, custom_match: {name: m, typed_config: {"@type": type.googleapis.com/` + typ + `, ` + fields + `}}}}`
		}
		// "one" takes 127.0.0.2 (an IP range) and, of the other
		// addresses, those a runtime fraction of 0% lets through (none);
		// the hash of "127.0.0.1" modulo 1 is 0, at the threshold 0:
		// "two" takes it.
		cfg := listenersBootstrap(listenerDef{
			Name: "fcm", Port: port,
			Fields: `filter_chain_matcher: {matcher_list: {matchers: [` +
				`{predicate: ` + custom("envoy.extensions.matching.input_matchers.ip.v3.Ip", `stat_prefix: "fcm_ip.", cidr_ranges: [{address_prefix: 127.0.0.2, prefix_len: 32}]`) + `, on_match: ` + chainAction("one") + `}, ` +
				`{predicate: ` + custom("envoy.extensions.matching.input_matchers.runtime_fraction.v3.RuntimeFraction", `runtime_fraction: {runtime_key: fcm.share, default_value: {numerator: 0}}`) + `, on_match: ` + chainAction("one") + `}, ` +
				`{predicate: ` + custom("envoy.extensions.matching.input_matchers.consistent_hashing.v3.ConsistentHashing", `threshold: 0, modulo: 1`) + `, on_match: ` + chainAction("two") + `}]}}`,
			Chains: []string{tcpChain("one", ""), tcpChain("two", "")},
		}) + "  clusters: [" + tcpCluster("one", one) + ", " + tcpCluster("two", two) + "]\n" +
			"layered_runtime: {layers: [{name: admin, admin_layer: {}}]}\n"
		s := Start(newDir(), cfg)

		Expect(talkFrom(port, "127.0.0.2")).To(Equal("one\nping"))
		Expect(talkFrom(port, "127.0.0.1")).To(Equal("two\nping"))
		// The runtime share raised to 100%: the runtime fraction now sends
		// every other address to "one".
		Expect(s.Post("/runtime_modify?fcm.share=100").Status).To(Equal(200))
		Expect(talkFrom(port, "127.0.0.1")).To(Equal("one\nping"))
		Expect(statValue(s, "listener.127.0.0.1_"+fmt.Sprint(port)+".fcm_ip.ip_parsing_failed")).To(Equal("0"))
	})

	It("names the chain with a format_string action, per connection, and closes a connection whose name no chain has", func() {
		one := startTCPServer(bannerEcho("one\n"))
		two := startTCPServer(bannerEcho("two\n"))
		port := freePort()
		cfg := listenersBootstrap(listenerDef{
			Name: "fcm", Port: port,
			Fields: `filter_chain_matcher: {on_no_match: {action: {name: f, typed_config: {"@type": type.googleapis.com/envoy.config.core.v3.SubstitutionFormatString, ` +
				`text_format_source: {inline_string: "from-%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}}}}}`,
			Chains: []string{tcpChain("from-127.0.0.1", ""), tcpChain("from-127.0.0.2", "")},
		}) + "  clusters: [" + tcpCluster("from-127.0.0.1", one) + ", " + tcpCluster("from-127.0.0.2", two) + "]\n"
		s := Start(newDir(), cfg)

		Expect(talkFrom(port, "127.0.0.1")).To(Equal("one\nping"))
		Expect(talkFrom(port, "127.0.0.2")).To(Equal("two\nping"))
		expectClosed(dialTCPFrom("127.0.0.3", port))
		Expect(statValue(s, "listener.127.0.0.1_"+fmt.Sprint(port)+".no_filter_chain_match")).To(Equal("1"))
	})
})
