package listener

import (
	"net/netip"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// chainName returns the name of the chain l selects for a connection from
// remote to local, or "" when it selects none.
func chainName(l *Listener, local, remote string) string {
	r := netip.MustParseAddrPort(remote)
	c := l.chains.find(netip.MustParseAddrPort(local), r, r)
	if c == nil {
		return ""
	}
	return c.name
}

func TestFilterChainPrecedence(t *testing.T) {
	tests := map[string]struct {
		chains string // the listener's filter_chains and default_filter_chain
		local  string // the connection's destination
		remote string // the connection's source
		want   string // the chosen chain, "" for none
	}{
		"exact destination port beats any port": {
			chains: `filter_chains: [{name: any}, {name: port, filter_chain_match: {destination_port: 8080}}]`,
			local:  "10.0.0.1:8080", remote: "10.0.0.2:5000", want: "port",
		},
		"another destination port falls back to any port": {
			chains: `filter_chains: [{name: any}, {name: port, filter_chain_match: {destination_port: 8080}}]`,
			local:  "10.0.0.1:9090", remote: "10.0.0.2:5000", want: "any",
		},
		"a wrong port never matches": {
			chains: `filter_chains: [{name: port, filter_chain_match: {destination_port: 8080}}]`,
			local:  "10.0.0.1:9090", remote: "10.0.0.2:5000", want: "",
		},
		"longest destination prefix wins": {
			chains: `filter_chains: [
				{name: wide, filter_chain_match: {prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}},
				{name: narrow, filter_chain_match: {prefix_ranges: [{address_prefix: 10.1.0.0, prefix_len: 16}]}},
				{name: any}]`,
			local: "10.1.2.3:80", remote: "192.0.2.1:5000", want: "narrow",
		},
		"destination outside every prefix falls back to no prefix": {
			chains: `filter_chains: [
				{name: wide, filter_chain_match: {prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}},
				{name: any}]`,
			local: "172.16.0.1:80", remote: "192.0.2.1:5000", want: "any",
		},
		"a port match is not given up for a later criterion": {
			chains: `filter_chains: [
				{name: port-from-lan, filter_chain_match: {destination_port: 80, source_prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}},
				{name: any}]` + "\ndefault_filter_chain: {name: default}",
			local: "127.0.0.1:80", remote: "192.0.2.1:5000", want: "default",
		},
		"port is decided before the destination prefix": {
			chains: `filter_chains: [
				{name: prefix, filter_chain_match: {prefix_ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}]}},
				{name: port, filter_chain_match: {destination_port: 80}}]`,
			local: "127.0.0.1:80", remote: "127.0.0.1:5000", want: "port",
		},
		"direct source prefix": {
			chains: `filter_chains: [
				{name: direct, filter_chain_match: {direct_source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}},
				{name: any}]`,
			local: "10.0.0.1:80", remote: "192.0.2.7:5000", want: "direct",
		},
		"loopback source prefers SAME_IP_OR_LOOPBACK": {
			chains: `filter_chains: [
				{name: any},
				{name: local, filter_chain_match: {source_type: SAME_IP_OR_LOOPBACK}},
				{name: external, filter_chain_match: {source_type: EXTERNAL}}]`,
			local: "127.0.0.1:80", remote: "127.0.0.1:5000", want: "local",
		},
		"same IP counts as local": {
			chains: `filter_chains: [{name: any}, {name: local, filter_chain_match: {source_type: SAME_IP_OR_LOOPBACK}}]`,
			local:  "10.0.0.1:80", remote: "10.0.0.1:5000", want: "local",
		},
		"remote source prefers EXTERNAL": {
			chains: `filter_chains: [
				{name: any},
				{name: local, filter_chain_match: {source_type: SAME_IP_OR_LOOPBACK}},
				{name: external, filter_chain_match: {source_type: EXTERNAL}}]`,
			local: "10.0.0.1:80", remote: "10.0.0.2:5000", want: "external",
		},
		"source type without ANY rejects the other kind": {
			chains: `filter_chains: [{name: external, filter_chain_match: {source_type: EXTERNAL}}]`,
			local:  "127.0.0.1:80", remote: "127.0.0.1:5000", want: "",
		},
		"longest source prefix wins": {
			chains: `filter_chains: [
				{name: wide, filter_chain_match: {source_prefix_ranges: [{address_prefix: 192.0.0.0, prefix_len: 8}]}},
				{name: narrow, filter_chain_match: {source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}, {address_prefix: 198.51.100.0, prefix_len: 24}]}}]`,
			local: "10.0.0.1:80", remote: "198.51.100.9:5000", want: "narrow",
		},
		"exact source port beats any port": {
			chains: `filter_chains: [{name: any}, {name: sport, filter_chain_match: {source_ports: [5000, 5001]}}]`,
			local:  "10.0.0.1:80", remote: "10.0.0.2:5001", want: "sport",
		},
		"other source port falls back": {
			chains: `filter_chains: [{name: any}, {name: sport, filter_chain_match: {source_ports: [5000]}}]`,
			local:  "10.0.0.1:80", remote: "10.0.0.2:6000", want: "any",
		},
		"ipv6 destination prefix": {
			chains: `filter_chains: [
				{name: v4, filter_chain_match: {prefix_ranges: [{address_prefix: 0.0.0.0, prefix_len: 0}]}},
				{name: v6, filter_chain_match: {prefix_ranges: [{address_prefix: "2001:db8::", prefix_len: 32}]}}]`,
			local: "[2001:db8::1]:80", remote: "[2001:db8::2]:5000", want: "v6",
		},
		"an IPv4 range does not match IPv6": {
			chains: `filter_chains: [{name: v4, filter_chain_match: {prefix_ranges: [{address_prefix: 0.0.0.0, prefix_len: 0}]}}]`,
			local:  "[::1]:80", remote: "[::1]:5000", want: "",
		},
		"no chain matches and no default": {
			chains: `filter_chains: [{name: lan, filter_chain_match: {source_prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}}]`,
			local:  "127.0.0.1:80", remote: "127.0.0.1:5000", want: "",
		},
		"default chain only": {
			chains: `default_filter_chain: {name: default}`,
			local:  "127.0.0.1:80", remote: "127.0.0.1:5000", want: "default",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := buildListener(t, stats.NewStore(), 1, "name: m\naddress: {socket_address: {address: 0.0.0.0, port_value: 80}}\n"+tc.chains)
			if got := chainName(l, tc.local, tc.remote); got != tc.want {
				t.Errorf("chain = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFilterChainSelectionDoesNotAllocate(t *testing.T) {
	l := buildListener(t, stats.NewStore(), 1, `
name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains:
- {name: any}
- {name: lan, filter_chain_match: {source_prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}}
- {name: port, filter_chain_match: {destination_port: 80, source_type: EXTERNAL}}
`)
	local, remote := netip.MustParseAddrPort("10.0.0.1:80"), netip.MustParseAddrPort("10.0.0.2:5000")
	if n := testing.AllocsPerRun(100, func() { l.chains.find(local, remote, remote) }); n != 0 {
		t.Errorf("find allocates %.0f times per connection, want 0", n)
	}
}

func BenchmarkFilterChainSelection(b *testing.B) {
	l := buildListener(b, stats.NewStore(), 1, `
name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains:
- {name: any}
- {name: lan, filter_chain_match: {source_prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}}
- {name: port, filter_chain_match: {destination_port: 80, source_type: EXTERNAL}}
- {name: v6, filter_chain_match: {prefix_ranges: [{address_prefix: "2001:db8::", prefix_len: 32}]}}
`)
	local, remote := netip.MustParseAddrPort("10.0.0.1:80"), netip.MustParseAddrPort("10.0.0.2:5000")
	for b.Loop() {
		l.chains.find(local, remote, remote)
	}
}
