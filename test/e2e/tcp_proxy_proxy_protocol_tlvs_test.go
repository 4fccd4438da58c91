package e2e

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("TCP proxy proxy_protocol_tlvs", func() {
	It("adds its TLVs (static and formatted) to the upstream PROXY header, merged with the downstream's by the merge policy", func() {
		up := startTCPServer(proxyHeaderEcho)
		fresh, add, overwrite, appendP := freePort(), freePort(), freePort(), freePort()
		chain := func(prefix, fields string) string {
			return `{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: ` + prefix + `, cluster: pp, ` + fields + `}}]}`
		}
		const static = `proxy_protocol_tlvs: [{type: 0xE0, value: dGNw}]` // "tcp"
		filter := "listener_filters: [" + proxyProtocolFilter("pass_through_tlvs: {match_type: INCLUDE_ALL}") + "]"
		cfg := listenersBootstrap(
			listenerDef{Name: "fresh", Port: fresh, Chains: []string{chain("fresh", `proxy_protocol_tlvs: [{type: 0xE0, value: dGNw}, {type: 0xE2, format_string: {text_format_source: {inline_string: "%DOWNSTREAM_REMOTE_ADDRESS%"}}}]`)}},
			listenerDef{Name: "add", Port: add, Fields: filter, Chains: []string{chain("add", static)}},
			listenerDef{Name: "overwrite", Port: overwrite, Fields: filter, Chains: []string{chain("overwrite", static+`, proxy_protocol_tlv_merge_policy: OVERWRITE_BY_TYPE_IF_EXISTS_OR_ADD`)}},
			listenerDef{Name: "append", Port: appendP, Fields: filter, Chains: []string{chain("append", static+`, proxy_protocol_tlv_merge_policy: APPEND_IF_EXISTS_OR_ADD`)}},
		) + "  clusters: [" + strings.TrimSuffix(tcpCluster("pp", up), "}") + ", " +
			upstreamPPSocket(`config: {version: V2, pass_through_tlvs: {match_type: INCLUDE_ALL}}`) + "}]\n"
		Start(newDir(), cfg)

		// No PROXY header downstream: the connection's addresses and the
		// configured TLVs, the format string's rendered for the connection.
		got, client := pingThrough(fresh, nil)
		Expect(got).To(Equal(fmt.Sprintf("V2 PROXY %s 127.0.0.1:%d tlvs=%s\nping", client, fresh, tlvHex(0xE0, "tcp")+tlvHex(0xE2, client.String()))))

		head := proxyV2("203.0.113.9:6000", "198.51.100.2:8443", []byte("\xe0\x00\x04down\x05\x00\x02id")...)
		const addrs = "V2 PROXY 203.0.113.9:6000 198.51.100.2:8443 tlvs="
		got, _ = pingThrough(add, head)
		Expect(got).To(Equal(addrs + tlvHex(0xE0, "down") + tlvHex(0x05, "id") + "\nping"))
		got, _ = pingThrough(overwrite, head)
		Expect(got).To(Equal(addrs + tlvHex(0xE0, "tcp") + tlvHex(0x05, "id") + "\nping"))
		got, _ = pingThrough(appendP, head)
		Expect(got).To(Equal(addrs + tlvHex(0xE0, "down") + tlvHex(0x05, "id") + tlvHex(0xE0, "tcp") + "\nping"))
	})
})
