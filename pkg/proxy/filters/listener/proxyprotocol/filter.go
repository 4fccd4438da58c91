package proxyprotocol

import (
	"net"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// filter is a compiled proxy_protocol filter, shared by the listener's
// connections.
type filter struct {
	parser parser
	stats  filterStats
	// rules says which TLVs go to the connection's dynamic metadata, by
	// type; nil when none do.
	rules map[byte]rule
	// pass is pass_through_tlvs: the TLVs kept for the upstream's PROXY
	// header.
	pass upstream.TLVSelection
}

// OnAccept peeks at the connection's first bytes until they hold a whole
// header (or show there is none), then consumes exactly the header and
// restores the addresses it carries. A malformed header, bytes that are
// not a header (unless allow_requests_without_proxy_protocol) and a
// disallowed version close the connection.
func (f *filter) OnAccept(s *listenerfilter.Socket) error {
	buf := make([]byte, firstPeek)
	want := 1
	for {
		n, err := s.Peek(buf, want)
		if err != nil {
			return err
		}
		r := f.parser.parse(buf[:n])
		switch r.outcome {
		case needMore:
			if r.need > len(buf) {
				buf = append(buf, make([]byte, r.need-len(buf))...)
			}
			want = r.need
			continue
		case done:
		default:
			f.stats.count(r)
			return listenerfilter.ErrRejected
		}
		if r.version == 0 {
			f.stats.count(r)
			return nil
		}
		if err := s.Discard(r.length); err != nil {
			return err
		}
		f.stats.count(r)
		s.SetProxyProtocol(proxyProtocolData(r, &f.pass, s.RemoteAddr(), s.LocalAddr()))
		if !r.keep {
			if f.rules != nil {
				applyRules(s, f.rules, r.tlvs)
			}
			s.SetRemoteAddr(net.TCPAddrFromAddrPort(r.src))
			s.SetLocalAddr(net.TCPAddrFromAddrPort(r.dst))
		}
		return nil
	}
}
