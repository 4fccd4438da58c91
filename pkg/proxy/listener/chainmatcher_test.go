package listener

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fcmInput is a matcher input of Envoy's network inputs, by short name.
func fcmInput(name string) string {
	return `{name: in, typed_config: {"@type": type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.` + name + `}}`
}

// fcmAction is an action naming a chain.
func fcmAction(chain string) string {
	return `{action: {name: fc, typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: ` + chain + `}}}`
}

// fcmListener is a listener with chains a, b and c, a default chain when
// dflt, and matcher as its filter_chain_matcher. The chains keep
// filter_chain_match fields that would choose c: the matcher ignores them.
func fcmListener(matcher string, dflt bool) string {
	s := `name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains:
- {name: a, filter_chain_match: {destination_port: 1}}
- {name: b, filter_chain_match: {destination_port: 2}}
- {name: c}
filter_chain_matcher: ` + matcher + "\n"
	if dflt {
		s += "default_filter_chain: {name: default}\n"
	}
	return s
}

func TestFilterChainMatcher(t *testing.T) {
	portTree := `{matcher_tree: {input: ` + fcmInput("DestinationPortInput") + `, exact_match_map: {map: {"8080": ` + fcmAction("a") + `, "9090": ` + fcmAction("b") + `}}}}`
	tests := map[string]struct {
		matcher string
		dflt    bool
		local   string
		remote  string
		det     detected
		want    string // "" for no chain
	}{
		"destination port exact map": {
			matcher: portTree, local: "127.0.0.1:9090", remote: "127.0.0.1:5000", want: "b",
		},
		"no match falls back to the default chain": {
			matcher: portTree, dflt: true, local: "127.0.0.1:7070", remote: "127.0.0.1:5000", want: "default",
		},
		"no match and no default": {
			matcher: portTree, local: "127.0.0.1:7070", remote: "127.0.0.1:5000", want: "",
		},
		"on_no_match names a chain": {
			matcher: `{matcher_tree: {input: ` + fcmInput("DestinationPortInput") + `, exact_match_map: {map: {"8080": ` + fcmAction("a") + `}}}, on_no_match: ` + fcmAction("c") + `}`,
			dflt:    true, local: "127.0.0.1:7070", remote: "127.0.0.1:5000", want: "c",
		},
		"an action naming no chain finds none, not the default": {
			matcher: `{matcher_tree: {input: ` + fcmInput("DestinationPortInput") + `, exact_match_map: {map: {"8080": ` + fcmAction("missing") + `}}}}`,
			dflt:    true, local: "127.0.0.1:8080", remote: "127.0.0.1:5000", want: "",
		},
		"source IP with the IP trie matcher": {
			matcher: `{matcher_tree: {input: ` + fcmInput("SourceIPInput") + `, custom_match: {name: ip, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.IPMatcher, range_matchers: [
				{ranges: [{address_prefix: 127.0.0.2, prefix_len: 32}], on_match: ` + fcmAction("b") + `},
				{ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}], on_match: ` + fcmAction("a") + `}]}}}}`,
			local: "127.0.0.1:80", remote: "127.0.0.2:5000", want: "b",
		},
		"server name prefix map": {
			matcher: `{matcher_tree: {input: ` + fcmInput("ServerNameInput") + `, prefix_match_map: {map: {"api.": ` + fcmAction("a") + `, "www.": ` + fcmAction("b") + `}}}}`,
			local:   "127.0.0.1:443", remote: "127.0.0.1:5000", det: detected{transport: "tls", sni: "www.example.com"}, want: "b",
		},
		"transport protocol": {
			matcher: `{matcher_tree: {input: ` + fcmInput("TransportProtocolInput") + `, exact_match_map: {map: {tls: ` + fcmAction("a") + `, raw_buffer: ` + fcmAction("b") + `}}}}`,
			local:   "127.0.0.1:443", remote: "127.0.0.1:5000", det: detected{transport: "raw_buffer"}, want: "b",
		},
		"application protocols as Envoy renders them": {
			matcher: `{matcher_tree: {input: ` + fcmInput("ApplicationProtocolInput") + `, exact_match_map: {map: {"'h2','http/1.1'": ` + fcmAction("a") + `}}}}`,
			local:   "127.0.0.1:443", remote: "127.0.0.1:5000", det: detected{transport: "tls", alpn: []string{"h2", "http/1.1"}}, want: "a",
		},
		"source type local": {
			matcher: `{matcher_tree: {input: ` + fcmInput("SourceTypeInput") + `, exact_match_map: {map: {local: ` + fcmAction("a") + `}}}, on_no_match: ` + fcmAction("b") + `}`,
			local:   "10.0.0.1:80", remote: "127.0.0.1:5000", want: "a",
		},
		"source type external has no value": {
			matcher: `{matcher_tree: {input: ` + fcmInput("SourceTypeInput") + `, exact_match_map: {map: {local: ` + fcmAction("a") + `}}}, on_no_match: ` + fcmAction("b") + `}`,
			local:   "10.0.0.1:80", remote: "192.0.2.1:5000", want: "b",
		},
		"matcher_list with source port and destination IP": {
			matcher: `{matcher_list: {matchers: [
				{predicate: {and_matcher: {predicate: [
					{single_predicate: {input: ` + fcmInput("SourcePortInput") + `, value_match: {exact: "5000"}}},
					{single_predicate: {input: ` + fcmInput("DestinationIPInput") + `, value_match: {exact: 10.0.0.1}}}]}},
				 on_match: ` + fcmAction("c") + `}]}}`,
			local: "10.0.0.1:80", remote: "192.0.2.1:5000", want: "c",
		},
		"format_string action names the chain from the server name": {
			matcher: `{on_no_match: {action: {name: f, typed_config: {"@type": type.googleapis.com/envoy.config.core.v3.SubstitutionFormatString, text_format_source: {inline_string: "%REQUESTED_SERVER_NAME%"}}}}}`,
			local:   "127.0.0.1:443", remote: "127.0.0.1:5000", det: detected{transport: "tls", sni: "b"}, want: "b",
		},
		"format_string action naming no chain finds none": {
			matcher: `{on_no_match: {action: {name: f, typed_config: {"@type": type.googleapis.com/envoy.config.core.v3.SubstitutionFormatString, text_format_source: {inline_string: "%REQUESTED_SERVER_NAME%"}}}}}`,
			dflt:    true, local: "127.0.0.1:443", remote: "127.0.0.1:5000", det: detected{transport: "tls", sni: "nope"}, want: "",
		},
		"format_string action with literal text": {
			matcher: `{on_no_match: {action: {name: f, typed_config: {"@type": type.googleapis.com/envoy.config.core.v3.SubstitutionFormatString, text_format_source: {inline_string: "c"}}}}}`,
			local:   "127.0.0.1:443", remote: "127.0.0.1:5000", want: "c",
		},
		"direct source IP": {
			matcher: `{matcher_list: {matchers: [{predicate: {single_predicate: {input: ` + fcmInput("DirectSourceIPInput") + `, value_match: {exact: 192.0.2.9}}}, on_match: ` + fcmAction("a") + `}]}}`,
			local:   "10.0.0.1:80", remote: "192.0.2.9:5000", want: "a",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := buildListener(t, stats.NewStore(), 1, fcmListener(tc.matcher, tc.dflt))
			det := tc.det
			if det.transport == "" {
				det.transport = rawBuffer
			}
			r := netip.MustParseAddrPort(tc.remote)
			got := ""
			if c := l.chains.findDetected(netip.MustParseAddrPort(tc.local), r, r, det); c != nil {
				got = c.name
			}
			if got != tc.want {
				t.Errorf("chain = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFilterChainMatcherErrors(t *testing.T) {
	action := fcmAction("a")
	tests := map[string]struct {
		config string
		want   string
	}{
		"a chain without a name": {
			config: `name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains: [{name: a}, {}]
filter_chain_matcher: {on_no_match: ` + action + `}`,
			want: "filter_chains[1].name: a filter chain needs a name",
		},
		"duplicate names": {
			config: `name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains: [{name: a}, {name: a}]
filter_chain_matcher: {on_no_match: ` + action + `}`,
			want: `filter_chains[1].name: filter chain name "a" is already used`,
		},
		"an action that is not a name": {
			config: `name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains: [{name: a}]
filter_chain_matcher: {on_no_match: {action: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.UInt32Value, value: 1}}}}`,
			want: "filter_chain_matcher.on_no_match.action.typed_config: a filter chain matcher's action is a google.protobuf.StringValue or an envoy.config.core.v3.SubstitutionFormatString",
		},
		"an input it cannot read": {
			config: `name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains: [{name: a}]
filter_chain_matcher: {matcher_tree: {input: ` + fcmInput("FilterStateInput") + `, exact_match_map: {map: {x: ` + action + `}}}}`,
			want: "filter_chain_matcher.matcher_tree.input.typed_config: a filter chain matcher cannot match on envoy.extensions.matching.common_inputs.network.v3.FilterStateInput",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Build(parseListener(t, tc.config), testDeps(stats.NewStore(), 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build error = %v, want %q", err, tc.want)
			}
		})
	}
}

// BenchmarkFilterChainMatcherSelection selects among the chains of
// BenchmarkFilterChainSelection with a filter_chain_matcher doing the
// same: a destination port map, then a source IP trie.
func BenchmarkFilterChainMatcherSelection(b *testing.B) {
	l := buildListener(b, stats.NewStore(), 1, `
name: m
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains: [{name: any}, {name: lan}, {name: port}, {name: v6}]
filter_chain_matcher:
  matcher_tree:
    input: `+fcmInput("DestinationPortInput")+`
    exact_match_map:
      map:
        "80":
          matcher:
            matcher_tree:
              input: `+fcmInput("SourceIPInput")+`
              custom_match: {name: ip, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.IPMatcher, range_matchers: [
                {ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}], on_match: `+fcmAction("lan")+`}]}}
            on_no_match: `+fcmAction("port")+`
  on_no_match: `+fcmAction("any")+`
`)
	local, remote := netip.MustParseAddrPort("10.0.0.1:80"), netip.MustParseAddrPort("10.0.0.2:5000")
	for b.Loop() {
		l.chains.find(local, remote, remote)
	}
}
