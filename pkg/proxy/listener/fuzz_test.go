package listener

import (
	"net/netip"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// FuzzFilterChainSelection builds listeners from arbitrary JSON (outside
// input: the configuration) and selects chains for arbitrary connections.
// Building must fail cleanly or succeed, and a selected chain must satisfy
// every one of its criteria.
func FuzzFilterChainSelection(f *testing.F) {
	f.Add(`{"address":{"socket_address":{"address":"0.0.0.0"}},"filter_chains":[{"name":"a"},{"name":"b","filter_chain_match":{"destination_port":80}}]}`,
		[]byte{10, 0, 0, 1}, uint16(80), []byte{10, 0, 0, 2}, uint16(5000))
	f.Add(`{"address":{"socket_address":{"address":"::"}},"filter_chains":[{"filter_chain_match":{"prefix_ranges":[{"address_prefix":"2001:db8::","prefix_len":32}],"source_type":"EXTERNAL"}},{"filter_chain_match":{"source_ports":[7]}}],"default_filter_chain":{}}`,
		[]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, uint16(443), []byte{127, 0, 0, 1}, uint16(7))
	f.Add(`{"address":{"socket_address":{"address":"127.0.0.1"}},"filter_chains":[{"filter_chain_match":{"source_prefix_ranges":[{"address_prefix":"10.0.0.0","prefix_len":8}],"direct_source_prefix_ranges":[{"address_prefix":"10.1.0.0","prefix_len":40}]}}]}`,
		[]byte{127, 0, 0, 1}, uint16(1), []byte{10, 1, 2, 3}, uint16(2))
	f.Fuzz(func(t *testing.T, config string, localIP []byte, localPort uint16, remoteIP []byte, remotePort uint16) {
		lc := &listenerv3.Listener{}
		if err := protojson.Unmarshal([]byte(config), lc); err != nil {
			return
		}
		l, err := Build(lc, testDeps(stats.NewStore(), 1))
		if err != nil {
			return
		}
		local, ok1 := netip.AddrFromSlice(localIP)
		remote, ok2 := netip.AddrFromSlice(remoteIP)
		if !ok1 || !ok2 {
			return
		}
		la, ra := netip.AddrPortFrom(local.Unmap(), localPort), netip.AddrPortFrom(remote.Unmap(), remotePort)
		c := l.chains.find(la, ra, ra)
		if c == nil || c == l.chains.dflt {
			return
		}
		m := &c.match
		localConn := ra.Addr().IsLoopback() || ra.Addr() == la.Addr()
		if portScore(m.dstPort, la.Port()) < 0 || prefixScore(m.dstRanges, la.Addr()) < 0 ||
			prefixScore(m.directRanges, ra.Addr()) < 0 || sourceTypeScore(m.sourceType, localConn) < 0 ||
			prefixScore(m.srcRanges, ra.Addr()) < 0 || portsScore(m.srcPorts, ra.Port()) < 0 {
			t.Fatalf("chain %s was selected for %s -> %s but does not match it", c.path, ra, la)
		}
	})
}
