package rbac

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// compileJSON compiles the filter's configuration written in JSON.
func compileJSON(js string, store *stats.Store) (netfilter.Filter, error) {
	p := &netrbacv3.RBAC{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		return nil, err
	}
	return Factory{}.Compile(p, netfilter.Context{Stats: store, Log: logr.Discard()})
}

// accepted returns the server side of a new loopback TCP connection.
func accepted(t *testing.T) (server net.Conn, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server, ln.Addr().(*net.TCPAddr).Port
}

func TestConnections(t *testing.T) {
	store := stats.NewStore()
	f, err := compileJSON(`{"stat_prefix":"tcp_in","shadow_rules_stat_prefix":"dry_",
		"rules":{"action":"ALLOW","policies":{"loopback":{"permissions":[{"any":true}],"principals":[{"source_ip":{"address_prefix":"127.0.0.0","prefix_len":8}}]}}},
		"shadow_rules":{"action":"ALLOW","policies":{"elsewhere":{"permissions":[{"any":true}],"principals":[{"direct_remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}]}}}}`, store)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := accepted(t)
	if f.(netfilter.DataFilter).OnData(c) != nil {
		t.Error("a loopback connection was denied")
	}
	deny, err := compileJSON(`{"stat_prefix":"tcp_other.","rules":{"action":"DENY","policies":{"this port":{"permissions":[{"destination_port_range":{"start":1,"end":65536}}],"principals":[{"any":true}]}}}}`, store)
	if err != nil {
		t.Fatal(err)
	}
	c, _ = accepted(t)
	if deny.(netfilter.DataFilter).OnData(c) == nil {
		t.Error("a connection to a denied port went on")
	}
	for name, want := range map[string]uint64{
		"tcp_in.rbac.allowed":             1,
		"tcp_in.rbac.dry_.shadow_denied":  1,
		"tcp_in.rbac.dry_.shadow_allowed": 0,
		"tcp_other.rbac.denied":           1,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestDelayDeny(t *testing.T) {
	f, err := compileJSON(`{"stat_prefix":"s","delay_deny":"0.2s","rules":{"action":"ALLOW"}}`, stats.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := accepted(t)
	start := time.Now()
	if f.(netfilter.DataFilter).OnData(c) == nil {
		t.Fatal("a connection no policy allows went on")
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("denied after %v, want delay_deny's 200ms", waited)
	}
}

func TestNoRules(t *testing.T) {
	f, err := compileJSON(`{"stat_prefix":"s"}`, stats.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := accepted(t)
	if f.(netfilter.DataFilter).OnData(c) != nil {
		t.Error("a filter without rules denied a connection")
	}
}

func TestCompileRefusals(t *testing.T) {
	for js, want := range map[string]string{
		`{}`: "stat_prefix: must be set",
		`{"stat_prefix":"s","matcher":{},"rules":{}}`: "rules: set with matcher, which would be ignored",
		`{"stat_prefix":"s","shadow_matcher":{"matcher_tree":{"input":{"name":"h","typed_config":{"@type":"type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput","header_name":"a"}},"exact_match_map":{"map":{}}}}}`: "shadow_matcher.matcher_tree.input.typed_config: the RBAC network filter cannot match envoy.type.matcher.v3.HttpRequestHeaderMatchInput",
		`{"stat_prefix":"s","rules":{"policies":{"p":{"permissions":[{"destination_port_range":{"start":5,"end":5}}],"principals":[{"any":true}]}}}}`:                                                                                  `rules.policies["p"].permissions[0].destination_port_range: range start 5 cannot be greater or equal than range end 5`,
		`{"stat_prefix":"s","shadow_rules":{"policies":{"p":{"permissions":[{"any":true}],"principals":[{"authenticated":{"principal_name":{"safe_regex":{"regex":"("}}}}]}}}}`:                                                        `shadow_rules.policies["p"].principals[0].authenticated.principal_name.safe_regex.regex: `,
	} {
		if _, err := compileJSON(js, stats.NewStore()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", js, err, want)
		}
	}
}

// input is a matcher input of the type.
func input(typ string) string {
	return `{"name":"i","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.` + typ + `"}}`
}

// rbacAction is an on_match action of the matcher form.
func rbacAction(name, action string) string {
	return `{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"` + name + `","action":"` + action + `"}}}`
}

// TestMatcher decides connections with the matcher form: loopback
// sources by the IP matcher, except the listener's own port, which a
// nested matcher_list denies; the shadow matcher would deny connections
// without a client certificate (its input cannot read a plaintext one).
func TestMatcher(t *testing.T) {
	store := stats.NewStore()
	c, port := accepted(t)
	f, err := compileJSON(`{"stat_prefix":"tcp_in.","shadow_rules_stat_prefix":"dry.",
		"matcher":{"matcher_tree":{"input":`+input("network.v3.SourceIPInput")+`,
			"custom_match":{"name":"ip","typed_config":{"@type":"type.googleapis.com/xds.type.matcher.v3.IPMatcher","range_matchers":[
				{"ranges":[{"address_prefix":"127.0.0.0","prefix_len":8}],"on_match":{"matcher":{"matcher_list":{"matchers":[
					{"predicate":{"single_predicate":{"input":`+input("network.v3.DestinationPortInput")+`,"value_match":{"exact":"`+strconv.Itoa(port)+`"}}},
					 "on_match":`+rbacAction("closed port", "DENY")+`}]},
					"on_no_match":`+rbacAction("loopback", "ALLOW")+`}}}]}}}},
		"shadow_matcher":{"matcher_tree":{"input":`+input("ssl.v3.UriSanInput")+`,"exact_match_map":{"map":{}}},"on_no_match":`+rbacAction("certified", "ALLOW")+`}}`, store)
	if err != nil {
		t.Fatal(err)
	}
	r := f.(netfilter.DataFilter).OnData(c)
	if r == nil || r.Reason != "rbac_access_denied_matched_policy[closed_port]" {
		t.Errorf("refusal %+v, want one by closed_port", r)
	}
	open, err := compileJSON(`{"stat_prefix":"tcp_in.","matcher":{"matcher_tree":{"input":`+input("network.v3.DestinationIPInput")+`,
		"exact_match_map":{"map":{"127.0.0.1":`+rbacAction("local", "ALLOW")+`}}}}}`, store)
	if err != nil {
		t.Fatal(err)
	}
	if r := open.(netfilter.DataFilter).OnData(c); r != nil {
		t.Errorf("a connection to 127.0.0.1 was refused: %+v", r)
	}
	for name, want := range map[string]uint64{
		"tcp_in.rbac.allowed": 1, "tcp_in.rbac.denied": 1,
		"tcp_in.rbac.dry.shadow_denied": 1, "tcp_in.rbac.dry.shadow_allowed": 0,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// stateConn is a connection with a filter state.
type stateConn struct {
	net.Conn
	netfilter.ConnState
}

func TestFilterStatePrincipalsAndInput(t *testing.T) {
	for name, js := range map[string]string{
		"principal": `{"stat_prefix":"s","rules":{"action":"ALLOW","policies":{"gold":{"permissions":[{"any":true}],"principals":[{"filter_state":{"key":"acme.tier","string_match":{"exact":"gold"}}}]}}}}`,
		"input": `{"stat_prefix":"s","matcher":{"matcher_tree":{"input":{"name":"f","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.FilterStateInput","key":"acme.tier"}},
			"exact_match_map":{"map":{"gold":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"gold","action":"ALLOW"}}}}}},
			"on_no_match":{"action":{"name":"d","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"deny","action":"DENY"}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, err := compileJSON(js, stats.NewStore())
			if err != nil {
				t.Fatal(err)
			}
			df := f.(netfilter.DataFilter)
			for _, c := range []struct {
				state any
				allow bool
			}{
				{filterstate.String("gold"), true},
				{filterstate.String("silver"), false},
				{nil, false},
			} {
				server, _ := accepted(t)
				conn := &stateConn{Conn: server}
				if c.state != nil {
					conn.SetFilterState("acme.tier", c.state)
				}
				if got := df.OnData(conn) == nil; got != c.allow {
					t.Errorf("state %v: allowed %v, want %v", c.state, got, c.allow)
				}
			}
		})
	}
}
