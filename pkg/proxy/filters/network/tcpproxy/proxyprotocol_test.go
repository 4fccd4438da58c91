package tcpproxy

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
)

func TestMergeTLVs(t *testing.T) {
	existing := "\x05\x00\x01a\xe0\x00\x01b\x05\x00\x01c"
	configured := "\x05\x00\x01X\xe1\x00\x01Y"
	for name, tc := range map[tcpproxyv3.ProxyProtocolTlvMergePolicy]string{
		tcpproxyv3.ProxyProtocolTlvMergePolicy_ADD_IF_ABSENT:                      existing,
		tcpproxyv3.ProxyProtocolTlvMergePolicy_OVERWRITE_BY_TYPE_IF_EXISTS_OR_ADD: configured + "\xe0\x00\x01b",
		tcpproxyv3.ProxyProtocolTlvMergePolicy_APPEND_IF_EXISTS_OR_ADD:            existing + configured,
	} {
		if got := string(mergeTLVs([]byte(existing), []byte(configured), name)); got != tc {
			t.Errorf("%s: %q, want %q", name, got, tc)
		}
	}
}

func TestCompilePPTLVs(t *testing.T) {
	p, err := compilePPTLVs(&tcpproxyv3.TcpProxy{ProxyProtocolTlvs: []*corev3.TlvEntry{{Type: 0xE0, Value: []byte("v")}}})
	if err != nil || p.tlvs.Empty() || p.policy != tcpproxyv3.ProxyProtocolTlvMergePolicy_ADD_IF_ABSENT {
		t.Fatalf("%+v, %v", p, err)
	}
	for want, cfg := range map[string]*tcpproxyv3.TcpProxy{
		"proxy_protocol_tlvs[0]: one of value and format_string must be set": {ProxyProtocolTlvs: []*corev3.TlvEntry{{Type: 1}}},
		"proxy_protocol_tlvs[0].type: 256":                                   {ProxyProtocolTlvs: []*corev3.TlvEntry{{Type: 256, Value: []byte("v")}}},
		"proxy_protocol_tlv_merge_policy: unknown policy 9":                  {ProxyProtocolTlvMergePolicy: 9},
	} {
		if _, err := compilePPTLVs(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
