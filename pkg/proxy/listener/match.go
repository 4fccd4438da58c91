package listener

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// anyPrefixes is what an empty list of ranges means: every address of
// both families, the least specific match there is. Treating it as the two
// /0 ranges makes "no ranges" and an explicit 0.0.0.0/0 equally specific,
// as in Envoy.
var anyPrefixes = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// chainMatch is a compiled filter_chain_match. Unset criteria match
// anything, less specifically than any set value.
type chainMatch struct {
	dstPort      uint32         // 0: any
	dstRanges    []netip.Prefix // never empty (anyPrefixes)
	directRanges []netip.Prefix // never empty (anyPrefixes)
	sourceType   listenerv3.FilterChainMatch_ConnectionSourceType
	srcRanges    []netip.Prefix // never empty (anyPrefixes)
	srcPorts     []uint32       // empty: any
	// serverNames are the exact names (lower case) and the wildcard
	// suffixes ("*.example.com" kept as ".example.com") of server_names;
	// both empty: any.
	serverNames []string
	wildcards   []string
	transport   string   // "": any
	appProtos   []string // empty: any
}

// detected is what the listener filters found out about a connection's
// first bytes (the tls_inspector's): its transport protocol ("tls", or
// "raw_buffer" when no filter says otherwise), the requested server name
// and the protocols the client offers with ALPN.
type detected struct {
	transport string
	sni       string
	alpn      []string
}

// rawBuffer is the transport protocol of a connection no listener filter
// recognised, as Envoy names it.
const rawBuffer = "raw_buffer"

// chain is one filter chain of a listener.
type chain struct {
	path    string // "filter_chains[i]" or "default_filter_chain", for logs
	name    string // the configured name, else path
	named   bool   // the chain has a configured name
	match   chainMatch
	handler ConnHandler
	// tls is the chain's TLS transport socket (nil: plaintext), and
	// connectTimeout its transport_socket_connect_timeout (0: none).
	tls            *tlsconfig.Server
	connectTimeout time.Duration
	// tap wraps the chain's connections once their handshake is done
	// (the tap transport socket), nil when none.
	tap ConnWrapper
	// tcpStats records each connection's TCP_INFO (tcp_stats), nil for
	// none.
	tcpStats ConnWrapper
}

// compileMatch compiles a filter_chain_match (nil matches everything).
// Errors name the field below filter_chain_match.
func compileMatch(m *listenerv3.FilterChainMatch) (chainMatch, error) {
	var errs []error
	ranges := func(field string, rs []*corev3.CidrRange) []netip.Prefix {
		if len(rs) == 0 {
			return anyPrefixes
		}
		out := make([]netip.Prefix, 0, len(rs))
		for i, r := range rs {
			p, err := cidr.Parse(r)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d].%w", field, i, err))
				continue
			}
			out = append(out, p)
		}
		return out
	}
	names, wildcards, err := compileServerNames(m.GetServerNames())
	if err != nil {
		errs = append(errs, err)
	}
	cm := chainMatch{
		serverNames:  names,
		wildcards:    wildcards,
		transport:    m.GetTransportProtocol(),
		appProtos:    m.GetApplicationProtocols(),
		dstPort:      m.GetDestinationPort().GetValue(),
		dstRanges:    ranges("prefix_ranges", m.GetPrefixRanges()),
		directRanges: ranges("direct_source_prefix_ranges", m.GetDirectSourcePrefixRanges()),
		sourceType:   m.GetSourceType(),
		srcRanges:    ranges("source_prefix_ranges", m.GetSourcePrefixRanges()),
		srcPorts:     m.GetSourcePorts(),
	}
	if cm.dstPort > 65535 {
		errs = append(errs, fmt.Errorf("destination_port: %d is not a port (1 to 65535)", cm.dstPort))
	}
	for i, p := range cm.srcPorts {
		if p == 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("source_ports[%d]: %d is not a port (1 to 65535)", i, p))
		}
	}
	return cm, errors.Join(errs...)
}

// compileServerNames splits server_names into exact names and wildcard
// suffixes. Envoy takes a wildcard only as a whole first label
// ("*.example.com"); partial wildcards are refused as Envoy refuses them.
func compileServerNames(list []string) (names, wildcards []string, err error) {
	var errs []error
	for i, n := range list {
		n = strings.ToLower(n)
		switch {
		case n == "":
			errs = append(errs, fmt.Errorf("server_names[%d]: empty server name", i))
		case strings.HasPrefix(n, "*.") && !strings.Contains(n[1:], "*") && len(n) > 2:
			wildcards = append(wildcards, n[1:])
		case strings.Contains(n, "*"):
			errs = append(errs, fmt.Errorf("server_names[%d]: partial wildcards are not supported in server_names (%q)", i, list[i]))
		default:
			names = append(names, n)
		}
	}
	return names, wildcards, errors.Join(errs...)
}

// overlaps reports whether some connection satisfies both matches equally
// specifically at every step, so that neither could be chosen: Envoy
// refuses such configurations ("multiple filter chains with the same
// matching rules are defined").
func (a chainMatch) overlaps(b chainMatch) bool {
	return a.dstPort == b.dstPort &&
		sharePrefix(a.dstRanges, b.dstRanges) &&
		shareStrings(a.serverNames, b.serverNames, a.wildcards, b.wildcards) &&
		a.transport == b.transport &&
		shareStrings(a.appProtos, b.appProtos, nil, nil) &&
		sharePrefix(a.directRanges, b.directRanges) &&
		a.sourceType == b.sourceType &&
		sharePrefix(a.srcRanges, b.srcRanges) &&
		sharePorts(a.srcPorts, b.srcPorts)
}

func sharePrefix(a, b []netip.Prefix) bool {
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

// shareStrings reports whether two lists (a1 with a2, b1 with b2) have a
// value in common, or are both empty: both then match the same
// connections equally specifically.
func shareStrings(a1, b1, a2, b2 []string) bool {
	if len(a1)+len(a2) == 0 || len(b1)+len(b2) == 0 {
		return len(a1)+len(a2) == len(b1)+len(b2)
	}
	for _, v := range a1 {
		if slices.Contains(b1, v) {
			return true
		}
	}
	for _, v := range a2 {
		if slices.Contains(b2, v) {
			return true
		}
	}
	return false
}

func sharePorts(a, b []uint32) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

// chainSet selects the filter chain of a connection.
type chainSet struct {
	chains []*chain
	dflt   *chain // default_filter_chain; nil when not configured
	// matcher is the listener's filter_chain_matcher, which then selects
	// the chain instead of the chains' filter_chain_match; nil when not
	// configured.
	matcher *chainMatcher
}

// maxStackChains is how many chains selection prunes without allocating.
const maxStackChains = 16

// find returns the filter chain for a connection from remote to local
// (direct is the peer's own address, which differs from remote when a
// listener filter restored the client's), or nil when none matches and there is no default chain. It follows Envoy's
// precedence: the criteria are applied in order (destination port,
// destination address, direct source address, source type, source address,
// source port), and each step keeps only the chains that match the
// connection most specifically (an exact port over no port, the longest
// matching prefix, a specific source type over ANY). A chain that a later
// step rejects is not replaced by a less specific one from an earlier step:
// the connection then gets the default chain.
func (s *chainSet) find(local, remote, direct netip.AddrPort) *chain {
	return s.findDetected(local, remote, direct, detected{transport: rawBuffer})
}

// findDetected is find for a connection the listener filters inspected:
// after the destination address come, in Envoy's order, the server name
// (an exact name, then the longest wildcard, then chains without
// server_names), the transport protocol and the application protocols.
func (s *chainSet) findDetected(local, remote, direct netip.AddrPort, det detected) *chain {
	if s.matcher != nil {
		return s.findByMatcher(local, remote, direct, det)
	}
	var buf [maxStackChains]*chain
	cands := append(buf[:0], s.chains...)
	localConn := remote.Addr().IsLoopback() || remote.Addr() == local.Addr()

	cands = prune(cands, func(m *chainMatch) int { return portScore(m.dstPort, local.Port()) })
	cands = prune(cands, func(m *chainMatch) int { return prefixScore(m.dstRanges, local.Addr()) })
	cands = prune(cands, func(m *chainMatch) int { return serverNameScore(m, det.sni) })
	cands = prune(cands, func(m *chainMatch) int { return stringScore(m.transport, det.transport) })
	cands = prune(cands, func(m *chainMatch) int { return protocolsScore(m.appProtos, det.alpn) })
	cands = prune(cands, func(m *chainMatch) int { return prefixScore(m.directRanges, direct.Addr()) })
	cands = prune(cands, func(m *chainMatch) int { return sourceTypeScore(m.sourceType, localConn) })
	cands = prune(cands, func(m *chainMatch) int { return prefixScore(m.srcRanges, remote.Addr()) })
	cands = prune(cands, func(m *chainMatch) int { return portsScore(m.srcPorts, remote.Port()) })
	if len(cands) == 0 {
		return s.dflt
	}
	// Overlapping chains were refused when the listener was built, so one
	// chain is left.
	return cands[0]
}

// findByMatcher is findDetected for a listener with a
// filter_chain_matcher. A matched action naming no chain finds none, as in
// Envoy; the default chain serves the connections the matcher does not
// match. It is a function of its own so that its data, which the matcher's
// closures make escape, costs nothing to the listeners without one.
func (s *chainSet) findByMatcher(local, remote, direct netip.AddrPort, det detected) *chain {
	d := &connData{local: local, remote: remote, direct: direct, det: &det}
	if a, ok := s.matcher.Match(d); ok {
		return a.resolve(d)
	}
	return s.dflt
}

// prune keeps the candidates with the highest non-negative score; a
// negative score means the chain cannot match.
func prune(cands []*chain, score func(*chainMatch) int) []*chain {
	best := -1
	out := cands[:0]
	for _, c := range cands {
		switch s := score(&c.match); {
		case s > best:
			best = s
			out = append(out[:0], c)
		case s == best && s >= 0:
			out = append(out, c)
		}
	}
	return out
}

// portScore: 1 for the exact port, 0 for any, -1 for another port.
func portScore(want uint32, got uint16) int {
	switch want {
	case 0:
		return 0
	case uint32(got):
		return 1
	default:
		return -1
	}
}

// portsScore is portScore for a list of ports.
func portsScore(want []uint32, got uint16) int {
	if len(want) == 0 {
		return 0
	}
	if slices.Contains(want, uint32(got)) {
		return 1
	}
	return -1
}

// exactNameScore ranks an exact server name above any wildcard.
const exactNameScore = 1 << 16

// serverNameScore: exactNameScore for an exact server name, the length of
// the wildcard suffix that covers the name (the longest one is the most
// specific), 0 for a chain without server_names, -1 otherwise.
func serverNameScore(m *chainMatch, sni string) int {
	if len(m.serverNames) == 0 && len(m.wildcards) == 0 {
		return 0
	}
	if sni == "" {
		return -1
	}
	sni = strings.ToLower(sni)
	if slices.Contains(m.serverNames, sni) {
		return exactNameScore
	}
	best := -1
	for _, w := range m.wildcards {
		if len(w) > best && len(sni) > len(w) && strings.HasSuffix(sni, w) {
			best = len(w)
		}
	}
	return best
}

// stringScore: 1 for the configured value, 0 when none is configured, -1
// otherwise.
func stringScore(want, got string) int {
	switch want {
	case "":
		return 0
	case got:
		return 1
	}
	return -1
}

// protocolsScore: 1 when the client offers one of the configured
// application protocols, 0 when none is configured, -1 otherwise.
func protocolsScore(want, offered []string) int {
	if len(want) == 0 {
		return 0
	}
	for _, p := range offered {
		if slices.Contains(want, p) {
			return 1
		}
	}
	return -1
}

// prefixScore is the length of the longest range containing ip, or -1.
func prefixScore(ranges []netip.Prefix, ip netip.Addr) int {
	if !ip.IsValid() {
		// No IP (an internal listener's connection): only a chain that
		// takes every address matches, as in Envoy.
		for _, p := range ranges {
			if p.Bits() == 0 {
				return 0
			}
		}
		return -1
	}
	best := -1
	for _, p := range ranges {
		if p.Bits() > best && p.Contains(ip) {
			best = p.Bits()
		}
	}
	return best
}

// sourceTypeScore: 1 when the chain's source type names the connection's
// kind (SAME_IP_OR_LOOPBACK for a connection from the loopback or from the
// listener's own address, EXTERNAL otherwise), 0 for ANY, -1 otherwise.
func sourceTypeScore(t listenerv3.FilterChainMatch_ConnectionSourceType, localConn bool) int {
	switch t {
	case listenerv3.FilterChainMatch_ANY:
		return 0
	case listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK:
		if localConn {
			return 1
		}
	case listenerv3.FilterChainMatch_EXTERNAL:
		if !localConn {
			return 1
		}
	}
	return -1
}
