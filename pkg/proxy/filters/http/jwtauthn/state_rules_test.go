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
	// Each case: the path, the connection's value (nil: none), whether
	// the request carries a token, and whether it goes on.
	for i, tc := range []struct {
		path        string
		conn        any
		token, pass bool
	}{
		{"/x", "secure", false, false},
		{"/x", "secure", true, true},
		{"/x", "optional", false, true},
		{"/x", "other", false, true},          // not a key
		{"/x", nil, false, true},              // no state
		{"/x", 42, false, true},               // not a string
		{"/open", "secure", false, true},      // a rule requiring nothing decides first
		{"/strict", "optional", false, false}, // a rule decides first
	} {
		var hdrs []string
		if tc.token {
			hdrs = []string{"authorization", "Bearer " + tok}
		}
		st := get(tc.path, hdrs...)
		if tc.conn != nil {
			st.ConnFilterState = map[string]any{"envoy.tcp_proxy.cluster": tc.conn}
		}
		if ok, _ := c.run(st); ok != tc.pass {
			t.Errorf("case %d (%s, %v, token %v): passed %v: %+v", i, tc.path, tc.conn, tc.token, ok, st.Reply)
		}
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
