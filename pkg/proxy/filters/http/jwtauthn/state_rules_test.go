package jwtauthn

import (
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// stringObject is a request filter state object that is not a string.
type stringObject string

func (o stringObject) FilterStateString() (string, bool) { return string(o), true }
func (stringObject) FilterStateProto() proto.Message     { return nil }

// TestFilterStateRules checks filter_state_rules: a request no rule
// matches gets the requirement its connection's (or its own) filter
// state value names; none without the object, for a value that is not a
// key or not a string; a matching rule decides first, even one requiring
// nothing.
func TestFilterStateRules(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := compile(t, `{"providers":{"p":`+providerJSON("iss", jwks(t, s), "")+`},
		"rules":[{"match":{"prefix":"/open"}},{"match":{"prefix":"/strict"},"requires":{"provider_name":"p"}}],
		"filter_state_rules":{"name":"envoy.tcp_proxy.cluster","requires":{
			"secure":{"provider_name":"p"},"optional":{"allow_missing":{}}}}}`, nil)
	tok := s.sign(t, claims(nil))
	for _, tc := range []struct {
		name, path string
		conn       any
		token      bool
		pass       bool
	}{
		{"secure without token", "/x", "secure", false, false},
		{"secure with token", "/x", "secure", true, true},
		{"optional", "/x", "optional", false, true},
		{"not a key", "/x", "other", false, true},
		{"no state", "/x", nil, false, true},
		{"not a string", "/x", 42, false, true},
		{"a rule requiring nothing decides first", "/open", "secure", false, true},
		{"a rule decides first", "/strict", "optional", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdrs []string
			if tc.token {
				hdrs = []string{"authorization", "Bearer " + tok}
			}
			st := get(tc.path, hdrs...)
			if tc.conn != nil {
				st.ConnFilterState = map[string]any{"envoy.tcp_proxy.cluster": tc.conn}
			}
			if ok, _ := c.run(st); ok != tc.pass {
				t.Fatalf("passed %v, want %v: %+v", ok, tc.pass, st.Reply)
			}
		})
	}
	// The request's own filter state comes before its connection's: an
	// object that is not a string hides the connection's value.
	st := get("/x")
	st.ConnFilterState = map[string]any{"envoy.tcp_proxy.cluster": "secure"}
	st.FilterState = map[string]accesslog.FilterStateObject{"envoy.tcp_proxy.cluster": stringObject("secure")}
	if ok, _ := c.run(st); !ok {
		t.Fatal("the connection's value was read though the request's own object hides it")
	}
}
