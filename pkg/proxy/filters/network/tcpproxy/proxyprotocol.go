package tcpproxy

import (
	"encoding/binary"
	"errors"
	"fmt"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstreamproxyprotocol"
)

// ppTLVs is proxy_protocol_tlvs with its merge policy: the TLVs the
// session adds to the downstream side an upstream PROXY protocol header
// describes (the cluster's transport socket sends those its
// pass_through_tlvs selects).
type ppTLVs struct {
	tlvs   upstreamproxyprotocol.TLVs
	policy tcpproxyv3.ProxyProtocolTlvMergePolicy
}

// compilePPTLVs compiles proxy_protocol_tlvs and
// proxy_protocol_tlv_merge_policy; the format strings may use the
// built-in operators only (the filter has no formatter extensions).
func compilePPTLVs(cfg *tcpproxyv3.TcpProxy) (ppTLVs, error) {
	t, err := upstreamproxyprotocol.CompileTLVs(cfg.GetProxyProtocolTlvs(), "proxy_protocol_tlvs", nil)
	p := ppTLVs{tlvs: t, policy: cfg.GetProxyProtocolTlvMergePolicy()}
	switch p.policy {
	case tcpproxyv3.ProxyProtocolTlvMergePolicy_ADD_IF_ABSENT, tcpproxyv3.ProxyProtocolTlvMergePolicy_OVERWRITE_BY_TYPE_IF_EXISTS_OR_ADD,
		tcpproxyv3.ProxyProtocolTlvMergePolicy_APPEND_IF_EXISTS_OR_ADD:
	default:
		err = errors.Join(err, fmt.Errorf("proxy_protocol_tlv_merge_policy: unknown policy %d", p.policy))
	}
	return p, err
}

// proxyProtocolData is the downstream side of the session's upstream
// PROXY protocol header, as Envoy's tcp_proxy leaves it in the
// connection's filter state: what the downstream's own PROXY header said
// (existing, when has) with the configured TLVs merged by the policy, or
// else (existing holding the connection's addresses) the configured TLVs.
func (s *session) proxyProtocolData(existing upstream.ProxyProtocolData, has bool) upstream.ProxyProtocolData {
	p := &s.p.cfg.pp
	if !has {
		if !p.tlvs.Empty() {
			existing.TLVs = string(s.renderPPTLVs(nil))
		}
		return existing
	}
	if p.tlvs.Empty() || p.policy == tcpproxyv3.ProxyProtocolTlvMergePolicy_ADD_IF_ABSENT {
		return existing
	}
	existing.TLVs = string(mergeTLVs([]byte(existing.TLVs), s.renderPPTLVs(nil), p.policy))
	return existing
}

// mergeTLVs merges the configured TLVs into the existing ones (both
// well-formed blocks) as Envoy's policies do: OVERWRITE_BY_TYPE puts the
// configured ones first, then the existing ones of other types; APPEND
// keeps every existing one, then the configured ones; ADD_IF_ABSENT keeps
// the existing ones alone.
func mergeTLVs(existing, configured []byte, policy tcpproxyv3.ProxyProtocolTlvMergePolicy) []byte {
	switch policy {
	case tcpproxyv3.ProxyProtocolTlvMergePolicy_OVERWRITE_BY_TYPE_IF_EXISTS_OR_ADD:
		var types [256]bool
		forEachTLV(configured, func(tlv []byte) { types[tlv[0]] = true })
		merged := configured[:len(configured):len(configured)]
		forEachTLV(existing, func(tlv []byte) {
			if !types[tlv[0]] {
				merged = append(merged, tlv...)
			}
		})
		return merged
	case tcpproxyv3.ProxyProtocolTlvMergePolicy_APPEND_IF_EXISTS_OR_ADD:
		return append(existing[:len(existing):len(existing)], configured...)
	}
	return existing
}

// renderPPTLVs appends the configured TLVs, their format strings rendered
// with the connection as it is now, to dst.
func (s *session) renderPPTLVs(dst []byte) []byte {
	return s.p.cfg.pp.tlvs.Append(dst, s.entry(datav3.AccessLogType_NotSet))
}

// forEachTLV calls f with each TLV (type, length, value) of a well-formed
// block.
func forEachTLV(block []byte, f func(tlv []byte)) {
	for len(block) >= 3 {
		n := 3 + int(binary.BigEndian.Uint16(block[1:3]))
		f(block[:n])
		block = block[n:]
	}
}
