package listener

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestFilterChainTLSCriteria(t *testing.T) {
	const chains = `filter_chains: [
		{name: exact, filter_chain_match: {server_names: [api.example.com]}},
		{name: wild, filter_chain_match: {server_names: ["*.example.com"]}},
		{name: deep, filter_chain_match: {server_names: ["*.b.example.com"]}},
		{name: h2, filter_chain_match: {transport_protocol: tls, application_protocols: [h2]}},
		{name: tls, filter_chain_match: {transport_protocol: tls}},
		{name: plain, filter_chain_match: {transport_protocol: raw_buffer}}]`
	tests := map[string]struct {
		det  detected
		want string
	}{
		"exact name":                                {detected{transport: "tls", sni: "api.example.com"}, "exact"},
		"names are case-insensitive":                {detected{transport: "tls", sni: "API.Example.COM"}, "exact"},
		"wildcard":                                  {detected{transport: "tls", sni: "www.example.com"}, "wild"},
		"longest wildcard wins":                     {detected{transport: "tls", sni: "x.b.example.com"}, "deep"},
		"wildcard covers several labels":            {detected{transport: "tls", sni: "x.y.example.com"}, "wild"},
		"a wildcard does not cover its bare suffix": {detected{transport: "tls", sni: "example.com"}, "tls"},
		"no name, ALPN h2":                          {detected{transport: "tls", alpn: []string{"http/1.1", "h2"}}, "h2"},
		"no name, other ALPN":                       {detected{transport: "tls", alpn: []string{"http/1.1"}}, "tls"},
		"plaintext":                                 {detected{transport: rawBuffer}, "plain"},
		// The server name is decided before the transport protocol: a
		// named chain is kept even though a later criterion could have
		// picked another.
		"name before ALPN": {detected{transport: "tls", sni: "api.example.com", alpn: []string{"h2"}}, "exact"},
	}
	l := buildListener(t, stats.NewStore(), 1, "name: m\naddress: {socket_address: {address: 0.0.0.0, port_value: 80}}\n"+chains)
	a := netip.MustParseAddrPort("10.0.0.1:80")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := l.chains.findDetected(a, a, a, tc.det)
			got := ""
			if c != nil {
				got = c.name
			}
			if got != tc.want {
				t.Errorf("chain = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFilterChainTLSCriteriaErrors(t *testing.T) {
	for name, tc := range map[string]struct{ chains, want string }{
		"partial wildcard": {
			`filter_chains: [{filter_chain_match: {server_names: ["api*.example.com", "*"]}}]`,
			`filter_chains[0].filter_chain_match.server_names[0]: partial wildcards are not supported in server_names ("api*.example.com")`,
		},
		"same names twice": {
			`filter_chains: [{filter_chain_match: {server_names: [a.example.com, b.example.com]}}, {filter_chain_match: {server_names: [B.example.com]}}]`,
			"filter_chains[1].filter_chain_match: multiple filter chains with the same matching rules are defined (filter_chains[0] matches the same connections)",
		},
		"same transport and protocols": {
			`filter_chains: [{filter_chain_match: {transport_protocol: tls, application_protocols: [h2]}}, {filter_chain_match: {transport_protocol: tls, application_protocols: [h2, http/1.1]}}]`,
			"filter_chains[1].filter_chain_match: multiple filter chains with the same matching rules are defined",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Build(parseListener(t, "name: m\naddress: {socket_address: {address: 0.0.0.0, port_value: 80}}\n"+tc.chains), testDeps(stats.NewStore(), 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
