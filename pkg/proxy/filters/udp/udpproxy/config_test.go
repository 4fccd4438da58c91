package udpproxy

import (
	"net/netip"
	"strings"
	"testing"

	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// parse reads a UdpProxyConfig from JSON.
func parse(t *testing.T, js string) *udpproxyv3.UdpProxyConfig {
	t.Helper()
	var cfg udpproxyv3.UdpProxyConfig
	if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

const routeTo = `{"name": "route", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route", "cluster": "%s"}}`

func action(cluster string) string { return strings.Replace(routeTo, "%s", cluster, 1) }

func TestCompileRefusesByPath(t *testing.T) {
	tests := map[string]struct{ js, want string }{
		"no route":            {`{"stat_prefix": "p"}`, "route_specifier: matcher"},
		"no stat prefix":      {`{"cluster": "c"}`, "stat_prefix: required"},
		"tunnel per packet":   {`{"stat_prefix": "p", "cluster": "c", "use_per_packet_load_balancing": true, "tunneling_config": {"proxy_host": "h"}}`, "tunneling_config: cannot be set with use_per_packet_load_balancing"},
		"gro":                 {`{"stat_prefix": "p", "cluster": "c", "upstream_socket_config": {"prefer_gro": true}}`, "upstream_socket_config.prefer_gro: not supported"},
		"datagram size":       {`{"stat_prefix": "p", "cluster": "c", "upstream_socket_config": {"max_rx_datagram_size": 70000}}`, "upstream_socket_config.max_rx_datagram_size: must be between"},
		"zero idle":           {`{"stat_prefix": "p", "cluster": "c", "idle_timeout": "0s"}`, "idle_timeout: must be greater than 0"},
		"input":               {`{"stat_prefix": "p", "matcher": {"matcher_tree": {"input": {"name": "i", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.ServerNameInput"}}, "exact_match_map": {"map": {"a": {"action": ` + action("c") + `}}}}}}`, "matcher.matcher_tree.input.typed_config: input envoy.extensions.matching.common_inputs.network.v3.ServerNameInput is not supported"},
		"action":              {`{"stat_prefix": "p", "matcher": {"on_no_match": {"action": {"name": "a", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput"}}}}}`, "matcher.on_no_match.action.typed_config: action"},
		"empty route cluster": {`{"stat_prefix": "p", "matcher": {"on_no_match": {"action": ` + action("") + `}}}`, "matcher.on_no_match.action.typed_config.cluster: must not be empty"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := compile(parse(t, tc.js))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMatcherRoutes(t *testing.T) {
	js := `{"stat_prefix": "p", "matcher": {
	  "matcher_list": {"matchers": [{
	    "predicate": {"single_predicate": {"input": {"name": "port", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.DestinationPortInput"}}, "value_match": {"exact": "53"}}},
	    "on_match": {"action": ` + action("dns") + `}}]},
	  "on_no_match": {"matcher": {
	    "matcher_tree": {"input": {"name": "ip", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.SourceIPInput"}},
	      "prefix_match_map": {"map": {"10.": {"action": ` + action("ten") + `}, "10.1.": {"action": ` + action("ten-one") + `}}}},
	    "on_no_match": {"action": ` + action("default") + `}}}}}`
	c, err := compile(parse(t, js))
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{cfg: c}
	tests := []struct{ local, peer, want string }{
		{"127.0.0.1:53", "10.1.2.3:999", "dns"},
		{"127.0.0.1:54", "10.1.2.3:999", "ten-one"},
		{"127.0.0.1:54", "10.2.2.3:999", "ten"},
		{"127.0.0.1:54", "[::ffff:10.1.0.1]:999", "ten-one"},
		{"127.0.0.1:54", "192.0.2.1:999", "default"},
	}
	for _, tc := range tests {
		got := p.route(addresses{local: netip.MustParseAddrPort(tc.local), peer: netip.MustParseAddrPort(tc.peer)})
		if got != tc.want {
			t.Errorf("route(%s -> %s) = %q, want %q", tc.peer, tc.local, got, tc.want)
		}
	}
	if len(c.clusters) != 4 {
		t.Errorf("clusters named: %v, want 4", c.clusters)
	}
}

func TestHashPolicy(t *testing.T) {
	c, err := compile(parse(t, `{"stat_prefix": "p", "cluster": "c", "hash_policies": [{"source_ip": true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.hash.of(netip.MustParseAddrPort("10.0.0.1:1"))
	b, _ := c.hash.of(netip.MustParseAddrPort("10.0.0.1:2"))
	d, _ := c.hash.of(netip.MustParseAddrPort("10.0.0.2:1"))
	if a != b || a == d {
		t.Errorf("source_ip hashes: same IP %x %x, other IP %x", a, b, d)
	}
	k, err := compile(parse(t, `{"stat_prefix": "p", "cluster": "c", "hash_policies": [{"key": "k"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	x, ok := k.hash.of(netip.MustParseAddrPort("10.0.0.1:1"))
	y, _ := k.hash.of(netip.MustParseAddrPort("10.0.0.9:9"))
	if !ok || x != y {
		t.Errorf("key hash: %x %x (ok %v), want one value", x, y, ok)
	}
}

func TestCompileOriginalSrc(t *testing.T) {
	c, err := compile(parse(t, `{"stat_prefix": "p", "cluster": "c", "use_original_src_ip": true}`))
	if err != nil || !c.originalSrc {
		t.Errorf("compile = %+v, %v; want use_original_src_ip on", c, err)
	}
}
