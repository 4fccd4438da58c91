package router

import (
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
)

// stateString is a filter state object with a PLAIN serialization, or
// none when it is "".
type stateString string

func (s stateString) FilterStateString() (string, bool) { return string(s), s != "" }
func (stateString) FilterStateProto() proto.Message     { return nil }

func TestRouteFilterStateMatch(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /, filter_state: [{key: acme.tenant, string_match: {prefix: gold-}}, {key: acme.region, string_match: {exact: eu}}]}
    route: {cluster: gold}
  - match: {prefix: /}
    route: {cluster: rest}
`)
	for _, c := range []struct {
		name  string
		state map[string]accesslog.FilterStateObject
		want  string
	}{
		{"both match", map[string]accesslog.FilterStateObject{"acme.tenant": stateString("gold-7"), "acme.region": stateString("eu")}, "gold"},
		{"one does not", map[string]accesslog.FilterStateObject{"acme.tenant": stateString("gold-7"), "acme.region": stateString("us")}, "rest"},
		{"one is missing", map[string]accesslog.FilterStateObject{"acme.tenant": stateString("gold-7")}, "rest"},
		{"no string form", map[string]accesslog.FilterStateObject{"acme.tenant": stateString(""), "acme.region": stateString("eu")}, "rest"},
		{"no filter state", nil, "rest"},
	} {
		req := Request{Host: "h", Path: "/", Method: "GET", FilterState: c.state}
		r := table.MatchRequest(&req)
		if r == nil || r.Cluster != c.want {
			t.Errorf("%s: route %v, want cluster %s", c.name, r, c.want)
		}
	}
}

// connState is a connection's filter state.
type connState map[string]any

func (c connState) FilterState(key string) (any, bool) {
	v, ok := c[key]
	return v, ok
}

func TestRouteFilterStateAddressMatch(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /, filter_state: [{key: dst, address_match: {ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}}]}
    route: {cluster: ten}
  - match: {prefix: /, filter_state: [{key: dst, address_match: {ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}], invert_match: true}}]}
    route: {cluster: other}
  - match: {prefix: /}
    route: {cluster: none}
`)
	addr := func(s string) filterstate.Address { return filterstate.Address(netip.MustParseAddrPort(s)) }
	for _, c := range []struct {
		name  string
		state map[string]accesslog.FilterStateObject
		conn  connState
		want  string
	}{
		{"in the range", map[string]accesslog.FilterStateObject{"dst": addr("10.1.2.3:80")}, nil, "ten"},
		{"outside, inverted", map[string]accesslog.FilterStateObject{"dst": addr("192.0.2.1:80")}, nil, "other"},
		{"the connection's", nil, connState{"dst": addr("10.9.9.9:1")}, "ten"},
		{"the request's first", map[string]accesslog.FilterStateObject{"dst": addr("192.0.2.1:80")}, connState{"dst": addr("10.9.9.9:1")}, "other"},
		{"not an address", map[string]accesslog.FilterStateObject{"dst": stateString("10.1.2.3:80")}, nil, "none"},
		{"missing", nil, nil, "none"},
	} {
		req := Request{Host: "h", Path: "/", Method: "GET", FilterState: c.state}
		if c.conn != nil {
			req.ConnFilterState = c.conn
		}
		r := table.MatchRequest(&req)
		if r == nil || r.Cluster != c.want {
			t.Errorf("%s: route %v, want cluster %s", c.name, r, c.want)
		}
	}
	_, err := Compile(parseRC(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /, filter_state: [{key: k, address_match: {ranges: [{address_prefix: 10.0.0.300, prefix_len: 8}]}}]}
    route: {cluster: c}
`))
	if err == nil || !strings.Contains(err.Error(), "match.filter_state[0].address_match.ranges[0].address_prefix: ") {
		t.Errorf("error %v", err)
	}
}

func TestRouteDynamicMetadataNeedsACompiler(t *testing.T) {
	_, err := Compile(parseRC(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /, dynamic_metadata: [{filter: f, path: [{key: k}], value: {present_match: true}}]}
    route: {cluster: c}
`))
	if err == nil || !strings.Contains(err.Error(), "match.dynamic_metadata: not supported here") {
		t.Errorf("error %v", err)
	}
}
