package capture

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// TableName is the name of the proxy's nftables tables, one per family.
const TableName = "outrigger"

// The base chains: inbound at prerouting, outbound at output, both nat
// chains at the destination NAT priority (-100), as iptables' nat table.
const (
	InboundChain  = "OUTRIGGER_INBOUND"
	OutboundChain = "OUTRIGGER_OUTPUT"
)

// family is an address family the rules are installed for.
type family int

const (
	ipv4 family = iota
	ipv6
)

// String is the family's name in nft's syntax.
func (f family) String() string {
	if f == ipv6 {
		return "ip6"
	}
	return "ip"
}

// matchKind is what one condition of a rule compares.
type matchKind int

const (
	matchTCP     matchKind = iota // the packet is TCP
	matchDport                    // its TCP destination port is port
	matchUID                      // its socket's owner is id
	matchGID                      // its socket's group is id
	matchOifname                  // it leaves through the interface name
	matchDaddr                    // its destination is in prefix
)

// match is one condition of a rule.
type match struct {
	kind   matchKind
	port   uint16
	id     uint32
	name   string
	prefix netip.Prefix
}

// rule is one rule of a chain: its conditions, then return (leave the
// chain: no capture) or a redirection to a local port.
type rule struct {
	matches  []match
	redirect uint16 // 0: return
}

// chain is a base chain and its rules.
type chain struct {
	name  string
	hook  string // "prerouting" or "output"
	rules []rule
}

// table is the rules of one family.
type table struct {
	family family
	chains []chain
}

// tables returns the tables the configuration installs, IPv4 first.
func (c *Config) tables() []table {
	return []table{c.table(ipv4), c.table(ipv6)}
}

// table builds one family's chains.
func (c *Config) table(f family) table {
	tcp := match{kind: matchTCP}
	inbound := chain{name: InboundChain, hook: "prerouting"}
	if c.InboundAll || len(c.InboundPorts) > 0 {
		for _, p := range c.ExcludeInboundPorts {
			inbound.rules = append(inbound.rules, rule{matches: []match{tcp, {kind: matchDport, port: p}}})
		}
		if c.InboundAll {
			inbound.rules = append(inbound.rules, rule{matches: []match{tcp}, redirect: c.InboundPort})
		}
		for _, p := range c.InboundPorts {
			if !slices.Contains(c.ExcludeInboundPorts, p) {
				inbound.rules = append(inbound.rules, rule{matches: []match{tcp, {kind: matchDport, port: p}}, redirect: c.InboundPort})
			}
		}
	}

	outbound := chain{name: OutboundChain, hook: "output"}
	var include []netip.Prefix
	for _, p := range c.OutboundCIDRs {
		if familyOf(p) == f {
			include = append(include, p)
		}
	}
	if c.OutboundAll || len(include) > 0 {
		// The proxy's own connections, and the ones over loopback (local
		// addresses, the pod's own included), are never captured.
		outbound.rules = append(outbound.rules,
			rule{matches: []match{tcp, {kind: matchUID, id: c.ProxyUID}}},
			rule{matches: []match{tcp, {kind: matchGID, id: c.ProxyGID}}},
			rule{matches: []match{tcp, {kind: matchOifname, name: "lo"}}},
		)
		for _, p := range c.ExcludeOutboundCIDRs {
			if familyOf(p) == f {
				outbound.rules = append(outbound.rules, rule{matches: []match{tcp, {kind: matchDaddr, prefix: p}}})
			}
		}
		for _, p := range c.ExcludeOutboundPorts {
			outbound.rules = append(outbound.rules, rule{matches: []match{tcp, {kind: matchDport, port: p}}})
		}
		if c.OutboundAll {
			outbound.rules = append(outbound.rules, rule{matches: []match{tcp}, redirect: c.OutboundPort})
		}
		for _, p := range include {
			outbound.rules = append(outbound.rules, rule{matches: []match{tcp, {kind: matchDaddr, prefix: p}}, redirect: c.OutboundPort})
		}
	}
	return table{family: f, chains: []chain{inbound, outbound}}
}

func familyOf(p netip.Prefix) family {
	if p.Addr().Is4() {
		return ipv4
	}
	return ipv6
}

// Text renders the tables in nft's syntax (what `nft list table` prints,
// and what `nft -f` would load), for --dry-run.
func (c *Config) Text() string {
	var b strings.Builder
	if c.Cleanup {
		for _, t := range c.tables() {
			fmt.Fprintf(&b, "delete table %s %s\n", t.family, TableName)
		}
		return b.String()
	}
	for _, t := range c.tables() {
		fmt.Fprintf(&b, "table %s %s {\n", t.family, TableName)
		for _, ch := range t.chains {
			fmt.Fprintf(&b, "\tchain %s {\n\t\ttype nat hook %s priority -100; policy accept;\n", ch.name, ch.hook)
			for _, r := range ch.rules {
				b.WriteString("\t\t")
				b.WriteString(r.text(t.family))
				b.WriteString("\n")
			}
			b.WriteString("\t}\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// text renders one rule.
func (r rule) text(f family) string {
	var parts []string
	for _, m := range r.matches {
		switch m.kind {
		case matchTCP:
			parts = append(parts, "meta l4proto tcp")
		case matchDport:
			parts = append(parts, fmt.Sprintf("tcp dport %d", m.port))
		case matchUID:
			parts = append(parts, fmt.Sprintf("meta skuid %d", m.id))
		case matchGID:
			parts = append(parts, fmt.Sprintf("meta skgid %d", m.id))
		case matchOifname:
			parts = append(parts, fmt.Sprintf("oifname %q", m.name))
		case matchDaddr:
			parts = append(parts, fmt.Sprintf("%s daddr %s", f, m.prefix))
		}
	}
	if r.redirect != 0 {
		parts = append(parts, fmt.Sprintf("redirect to :%d", r.redirect))
	} else {
		parts = append(parts, "return")
	}
	return strings.Join(parts, " ")
}
