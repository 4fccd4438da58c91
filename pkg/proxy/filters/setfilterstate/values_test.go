package setfilterstate

import (
	"net/netip"
	"strings"
	"testing"

	sfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/set_filter_state/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
)

// list reads a YAML list of FilterStateValue.
func list(t *testing.T, y string) []*sfsv3.FilterStateValue {
	t.Helper()
	var raw []any
	if err := yaml.Unmarshal([]byte(y), &raw); err != nil {
		t.Fatal(err)
	}
	var out []*sfsv3.FilterStateValue
	for _, r := range raw {
		j, err := yaml.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(j)
		if err != nil {
			t.Fatal(err)
		}
		v := &sfsv3.FilterStateValue{}
		if err := protojson.Unmarshal(js, v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// state is a connection filter state for the entries.
type state map[string]any

func (s state) FilterState(key string) (any, bool) {
	v, ok := s[key]
	return v, ok
}

func TestApply(t *testing.T) {
	vs, err := Compile(list(t, `
- object_key: envoy.tcp_proxy.cluster
  format_string: {text_format_source: {inline_string: "c-%REQUESTED_SERVER_NAME%"}}
- object_key: acme.tenant
  factory_key: envoy.string
  format_string: {text_format_source: {inline_string: "%FILTER_STATE(envoy.tcp_proxy.cluster:PLAIN)%/t"}}
- object_key: acme.hash
  factory_key: envoy.hashable_string
  format_string: {text_format_source: {inline_string: "h"}}
- object_key: envoy.upstream.dynamic_port
  format_string: {text_format_source: {inline_string: "8443"}}
- object_key: envoy.network.transport_socket.original_dst_address
  format_string: {text_format_source: {inline_string: "127.0.0.1:9"}}
# A missing header renders "-" unless omit_empty_values, as in Envoy.
- object_key: acme.empty
  factory_key: envoy.string
  skip_if_empty: true
  format_string: {omit_empty_values: true, text_format_source: {inline_string: "%REQ(x-missing)%"}}
- object_key: acme.kept_empty
  factory_key: envoy.string
  format_string: {text_format_source: {inline_string: "%REQ(x-missing)%"}}
`), "on_new_connection", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := state{}
	e := &accesslog.Entry{RequestedServerName: "api.test", ConnFilterState: st}
	vs.Apply(e, func(key string, obj accesslog.FilterStateObject) { st[key] = obj })
	want := map[string]any{
		"envoy.tcp_proxy.cluster":     filterstate.String("c-api.test"),
		"acme.tenant":                 filterstate.String("c-api.test/t"),
		"acme.hash":                   filterstate.HashableString("h"),
		"envoy.upstream.dynamic_port": filterstate.UInt32(8443),
		"envoy.network.transport_socket.original_dst_address": filterstate.Address(mustAddrPort(t, "127.0.0.1:9")),
		// %REQ% of a missing header renders "-" in a text format.
		"acme.kept_empty": filterstate.String("-"),
	}
	if len(st) != len(want) {
		t.Errorf("state %v, want %v", st, want)
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("%s: %#v, want %#v", k, st[k], v)
		}
	}
}

func TestApplySkipsEmptyAndBadValues(t *testing.T) {
	vs, err := Compile(list(t, `
- object_key: acme.empty
  factory_key: envoy.string
  skip_if_empty: true
  format_string: {text_format_source: {inline_string: ""}}
- object_key: envoy.upstream.dynamic_port
  format_string: {text_format_source: {inline_string: "99999999999"}}
- object_key: envoy.network.transport_socket.original_dst_address
  format_string: {text_format_source: {inline_string: "not an address"}}
- object_key: acme.empty_kept
  factory_key: envoy.string
  format_string: {text_format_source: {inline_string: ""}}
`), "f", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := state{}
	vs.Apply(&accesslog.Entry{}, func(key string, obj accesslog.FilterStateObject) { st[key] = obj })
	if len(st) != 1 || st["acme.empty_kept"] != filterstate.String("") {
		t.Errorf("state %v, want only acme.empty_kept, empty", st)
	}
}

func TestCompileRefusals(t *testing.T) {
	for y, want := range map[string]string{
		`[{object_key: acme.custom, format_string: {text_format_source: {inline_string: x}}}]`:                         `f[0].object_key: 'acme.custom' does not have an object factory`,
		`[{object_key: acme.custom, factory_key: acme.nope, format_string: {text_format_source: {inline_string: x}}}]`: `f[0].factory_key: 'acme.nope' does not have an object factory`,
		`[{object_key: envoy.network.upstream_server_name, format_string: {text_format_source: {inline_string: x}}}]`:  `f[0].object_key: 'envoy.network.upstream_server_name' does not have an object factory`,
		`[{factory_key: envoy.string, format_string: {text_format_source: {inline_string: x}}}]`:                       `f[0].object_key: required`,
		`[{object_key: a, factory_key: envoy.string}]`:                                                                 `f[0].format_string: required`,
		`[{object_key: a, factory_key: envoy.string, format_string: {text_format_source: {inline_string: "%NOPE%"}}}]`: `f[0].format_string.text_format_source.inline_string: `,
	} {
		_, err := Compile(list(t, y), "f", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", y, err, want)
		}
	}
}

func mustAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}
