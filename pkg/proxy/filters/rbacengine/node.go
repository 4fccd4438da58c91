package rbacengine

import (
	"net/netip"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// kind is what a node tests.
type kind uint8

const (
	kindAny kind = iota
	kindAnd
	kindOr
	kindNot
	kindHeader
	kindPath
	kindURITemplate
	kindDestinationIP
	kindDestinationPort
	kindDestinationPortRange
	kindMetadata
	kindRouteMetadata
	kindServerName
	kindAuthenticated
	kindSourceIP
	kindDirectRemoteIP
	kindRemoteIP
	kindFilterState
	kindMTLSAuthenticated
	kindUpstreamIPPort
)

// node is a compiled permission or principal. It is one concrete type
// with a switch rather than an interface per kind, so that evaluating a
// tree allocates nothing and the input never escapes.
type node struct {
	kind kind
	// kids are the rules of and/or, or the one rule of not.
	kids []node
	// header is a header matcher.
	header router.HeaderMatch
	// str matches the path, the server name or, with hasStr, the
	// authenticated principal name.
	str    router.StringMatcher
	hasStr bool
	// prefix is an IP matcher's range.
	prefix netip.Prefix
	// lo and hi are a port (lo) or a port range [lo, hi); with ports,
	// upstream_ip_port's closed range [lo, hi].
	lo, hi uint32
	ports  bool
	meta   *filter.MetadataMatcher
	// tmpl is a uri_template permission's matcher.
	tmpl *router.URITemplate
	// key is a filter_state principal's key, str its string matcher or
	// addr its address_match.
	key  string
	addr *filterstate.AddressMatch
	// san is an mtls_authenticated principal's san_matcher, nil for
	// any validated certificate.
	san *tlsconfig.SANMatcher
}

// simplify replaces an and or an or of one rule by the rule, at every
// level, so that evaluation takes fewer steps; the result is the same.
func (n node) simplify() node {
	switch n.kind {
	case kindAnd, kindOr, kindNot:
		for i := range n.kids {
			n.kids[i] = n.kids[i].simplify()
		}
		if n.kind != kindNot && len(n.kids) == 1 {
			return n.kids[0]
		}
	}
	return n
}

// requiredPath is a prefix that the path of every request the node
// matches has ("" when there is none to tell): Evaluate skips a policy
// whose permissions require a prefix the path lacks without walking them.
func (n *node) requiredPath() string {
	switch n.kind {
	case kindPath:
		return n.str.RequiredPrefix()
	case kindAnd:
		// Every rule must match: any rule's prefix is required; the
		// longest rules out the most.
		longest := ""
		for i := range n.kids {
			if p := n.kids[i].requiredPath(); len(p) > len(longest) {
				longest = p
			}
		}
		return longest
	case kindOr:
		// One rule must match: only what all of them require.
		common := ""
		for i := range n.kids {
			p := n.kids[i].requiredPath()
			if p == "" {
				return ""
			}
			if i == 0 {
				common = p
				continue
			}
			j := 0
			for j < len(p) && j < len(common) && p[j] == common[j] {
				j++
			}
			common = common[:j]
		}
		return common
	}
	return ""
}

// needs is what the node reads beyond the request head.
func (n *node) needs() Needs {
	switch n.kind {
	case kindAnd, kindOr, kindNot:
		var x Needs
		for i := range n.kids {
			x |= n.kids[i].needs()
		}
		return x
	case kindDestinationIP, kindDestinationPort, kindDestinationPortRange, kindSourceIP, kindDirectRemoteIP, kindRemoteIP:
		return NeedAddresses
	case kindAuthenticated, kindServerName, kindMTLSAuthenticated:
		return NeedTLS
	case kindRouteMetadata:
		return NeedRoute
	case kindFilterState, kindUpstreamIPPort:
		return NeedFilterState
	}
	return 0
}

// match evaluates the node as Envoy's matchers do.
func (n *node) match(in *Input) bool {
	switch n.kind {
	case kindAny:
		return true
	case kindAnd:
		for i := range n.kids {
			if !n.kids[i].match(in) {
				return false
			}
		}
		return true
	case kindOr:
		for i := range n.kids {
			if n.kids[i].match(in) {
				return true
			}
		}
		return false
	case kindNot:
		return !n.kids[0].match(in)
	case kindHeader:
		// A connection has no headers: Envoy matches its header rules
		// against an empty map.
		if in.Request == nil {
			var none router.Request
			return n.header.Matches(&none)
		}
		return n.header.Matches(in.Request)
	case kindPath:
		return in.hasPath && n.str.Match(in.urlPath)
	case kindURITemplate:
		// Without a :path (a connection) the template sees "", which
		// no template matches.
		return in.hasPath && n.tmpl.Match(in.urlPath)
	case kindDestinationIP:
		return contains(n.prefix, in.Local.Addr())
	case kindDestinationPort:
		return in.Local.IsValid() && uint32(in.Local.Port()) == n.lo
	case kindDestinationPortRange:
		p := uint32(in.Local.Port())
		return in.Local.IsValid() && n.lo <= p && p < n.hi
	case kindSourceIP:
		return contains(n.prefix, in.Source)
	case kindDirectRemoteIP:
		return contains(n.prefix, in.DirectRemote)
	case kindRemoteIP:
		return contains(n.prefix, in.Remote)
	case kindMetadata:
		return n.meta.Match(in.Metadata)
	case kindRouteMetadata:
		// Without a route there is no metadata to match: Envoy says no.
		return in.HasRoute && n.meta.Match(in.RouteMetadata)
	case kindServerName:
		return n.str.Match(in.ServerName)
	case kindAuthenticated:
		return authenticated(n, in)
	case kindFilterState:
		return filterStateMatches(n, in)
	case kindUpstreamIPPort:
		return upstreamIPPort(n, in)
	case kindMTLSAuthenticated:
		return mtlsAuthenticated(n, in)
	}
	return false
}

// filterStateMatches is Envoy's FilterStateMatcher: with a string_match,
// the object under the key has a string serialization (PLAIN) that the
// matcher accepts (a connection's plain string value is its own); with an
// address_match, it is an address in the ranges.
func filterStateMatches(n *node, in *Input) bool {
	if in.FilterState == nil {
		return false
	}
	v, ok := in.FilterState(n.key)
	if !ok {
		return false
	}
	if n.addr != nil {
		return n.addr.Match(v)
	}
	switch o := v.(type) {
	case string:
		return n.str.Match(o)
	case interface{ FilterStateString() (string, bool) }:
		s, ok := o.FilterStateString()
		return ok && n.str.Match(s)
	}
	return false
}

// contains reports whether ip is in p; an IPv4 address mapped into IPv6
// (a dual-stack socket's) counts as IPv4.
func contains(p netip.Prefix, ip netip.Addr) bool {
	return ip.IsValid() && p.Contains(ip.Unmap())
}

// authenticated is Envoy's authenticated principal: a TLS connection, and
// when principal_name is set, a peer certificate whose URI SANs, then DNS
// SANs, then subject match it.
func authenticated(n *node, in *Input) bool {
	if !in.TLS {
		return false
	}
	if !n.hasStr {
		return true
	}
	p := in.Peer
	if p == nil {
		// No certificate: Envoy matches the empty subject.
		return n.str.Match("")
	}
	for _, u := range p.URIs {
		if n.str.Match(u) {
			return true
		}
	}
	for _, d := range p.DNSNames {
		if n.str.Match(d) {
			return true
		}
	}
	return n.str.Match(p.Subject)
}
