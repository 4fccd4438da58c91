package router

import (
	"strings"
	"testing"
)

func TestUpgradeConfigs(t *testing.T) {
	tab := mustCompile(t, `
virtual_hosts:
- name: all
  domains: ["*"]
  routes:
  - {name: tunnel, match: {connect_matcher: {}}, route: {cluster: c, upgrade_configs: [{upgrade_type: connect, connect_config: {}}]}}
  - {name: ws, match: {prefix: /ws}, route: {cluster: c, upgrade_configs: [{upgrade_type: WebSocket}, {upgrade_type: h2c, enabled: false}]}}
  - {name: any, match: {prefix: /}, route: {cluster: c}}
`)
	connect := tab.MatchRequest(&Request{Host: "x:443", Method: "CONNECT"})
	if connect == nil || connect.Name != "tunnel" || connect.Connect == nil {
		t.Fatalf("CONNECT matched %+v, want the connect_matcher route with its connect_config", connect)
	}
	if r := tab.MatchRequest(&Request{Host: "x", Path: "/", Method: "GET"}); r == nil || r.Name != "any" {
		t.Fatalf("GET / matched %v, want any (connect_matcher routes take CONNECT only)", r)
	}
	ws := tab.MatchRequest(&Request{Host: "x", Path: "/ws", Method: "GET"})
	for typ, want := range map[string][2]bool{"websocket": {true, true}, "WEBSOCKET": {true, true}, "H2C": {false, true}, "spdy": {false, false}} {
		if enabled, set := ws.Upgrade(typ); enabled != want[0] || set != want[1] {
			t.Errorf("Upgrade(%q) = %v, %v; want %v, %v", typ, enabled, set, want[0], want[1])
		}
	}
	if ws.Connect != nil {
		t.Error("a websocket route terminates CONNECT")
	}
}

func TestUpgradeConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`[{upgrade_type: websocket, connect_config: {}}]`:        "upgrade_configs[0].connect_config: non-CONNECT upgrade type websocket has ConnectConfig",
		`[{upgrade_type: websocket}, {upgrade_type: WebSocket}]`: "upgrade_configs[1].upgrade_type: duplicate upgrade WebSocket",
	} {
		rc := parseRC(t, `{virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: c, upgrade_configs: `+cfg+`}}]}]}`)
		_, err := Compile(rc)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", cfg, err, want)
		}
	}
}

func TestConnectProxyProtocolConfig(t *testing.T) {
	tab := mustCompile(t, `
virtual_hosts:
- name: all
  domains: ["*"]
  routes:
  - {name: v1, match: {connect_matcher: {}}, route: {cluster: c, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {proxy_protocol_config: {}}}]}}
`)
	v1 := tab.MatchRequest(&Request{Host: "x:443", Method: "CONNECT"})
	if v1 == nil || v1.Connect == nil || !v1.Connect.ProxyProtocol || v1.Connect.ProxyProtocolV2 {
		t.Fatalf("v1 route: %+v", v1)
	}
	rc := parseRC(t, `{virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {connect_matcher: {}}, route: {cluster: c, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {proxy_protocol_config: {version: V2, pass_through_tlvs: {match_type: INCLUDE_ALL}}}}]}}]}]}`)
	if _, err := Compile(rc); err == nil || !strings.Contains(err.Error(), "upgrade_configs[0].connect_config.proxy_protocol_config.pass_through_tlvs: the PROXY header of a terminated CONNECT carries no TLVs") {
		t.Errorf("TLVs: %v", err)
	}
}

func TestConnectUDPConfig(t *testing.T) {
	tab := mustCompile(t, `
virtual_hosts:
- name: all
  domains: ["*"]
  routes:
  - {name: masque, match: {prefix: /.well-known/masque/udp/}, route: {cluster: c, upgrade_configs: [{upgrade_type: CONNECT-UDP, connect_config: {}}]}}
  - {name: fwd, match: {prefix: /}, route: {cluster: c, upgrade_configs: [{upgrade_type: connect-udp}]}}
`)
	r := tab.MatchRequest(&Request{Host: "10.0.0.1:53", Path: "/.well-known/masque/udp/10.0.0.1/53/", Method: "GET"})
	if r == nil || r.Name != "masque" || !r.TerminatesConnectUDP() {
		t.Fatalf("CONNECT-UDP matched %+v, want the masque route terminating it", r)
	}
	if enabled, set := r.Upgrade("connect-udp"); !enabled || !set {
		t.Errorf("Upgrade(connect-udp) = %v, %v", enabled, set)
	}
	// As Envoy's, the route's one connect_config also ends a CONNECT.
	if !r.TerminatesTunnel("CONNECT", true) {
		t.Error("the connect_config of a CONNECT-UDP upgrade does not end a CONNECT on its route")
	}
	// Without connect_config, CONNECT-UDP is forwarded as an upgrade.
	if fwd := tab.MatchRequest(&Request{Host: "x", Path: "/other", Method: "GET"}); fwd == nil || fwd.Name != "fwd" || fwd.TerminatesConnectUDP() {
		t.Fatalf("forwarding route: %+v", fwd)
	}
}
