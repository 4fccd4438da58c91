package rbacengine

import (
	"net/netip"
	"strings"
	"testing"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
)

// upstreamMatcher is an upstream_ip_port permission with the matcher's
// JSON fields.
func upstreamMatcher(fields string) string {
	return `{"matcher":{"name":"envoy.rbac.matchers.upstream_ip_port","typed_config":{"@type":"type.googleapis.com/envoy.extensions.rbac.matchers.upstream_ip_port.v3.UpstreamIpPortMatcher",` + fields + `}}}`
}

// withUpstream is a request whose filter state holds the saved upstream
// address addr ("" for none).
func withUpstream(addr string) *Input {
	in := request()
	in.FilterState = func(key string) (any, bool) {
		if addr == "" || key != "envoy.stream.upstream_address" {
			return nil, false
		}
		return filterstate.Address(netip.MustParseAddrPort(addr)), true
	}
	return in
}

func TestUpstreamIPPort(t *testing.T) {
	tests := []struct {
		name, fields, upstream string
		want                   bool
	}{
		{"in range", `"upstream_ip":{"address_prefix":"10.0.0.0","prefix_len":8}`, "10.1.2.3:443", true},
		{"out of range", `"upstream_ip":{"address_prefix":"10.0.0.0","prefix_len":8}`, "192.168.1.1:443", false},
		{"no saved address", `"upstream_ip":{"address_prefix":"0.0.0.0","prefix_len":0}`, "", false},
		// Envoy's port range is closed here: its end matches.
		{"port at the end", `"upstream_port_range":{"start":400,"end":443}`, "10.1.2.3:443", true},
		{"port below", `"upstream_port_range":{"start":444,"end":500}`, "10.1.2.3:443", false},
		{"both, port out", `"upstream_ip":{"address_prefix":"10.1.2.3","prefix_len":32},"upstream_port_range":{"start":80,"end":80}`, "10.1.2.3:443", false},
		{"both in", `"upstream_ip":{"address_prefix":"10.1.2.3","prefix_len":32},"upstream_port_range":{"start":80,"end":443}`, "10.1.2.3:443", true},
		{"mapped IPv4", `"upstream_ip":{"address_prefix":"10.0.0.0","prefix_len":8}`, "[::ffff:10.1.2.3]:443", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := compileJSON(t, allowIf(upstreamMatcher(tc.fields), anyRule))
			if got := e.Evaluate(withUpstream(tc.upstream)).Allowed; got != tc.want {
				t.Errorf("allowed %v, want %v", got, tc.want)
			}
		})
	}
	// Without a filter state at all (a connection of a filter that keeps
	// none) nothing matches either.
	in := request()
	if compileJSON(t, allowIf(upstreamMatcher(`"upstream_port_range":{"start":0,"end":65535}`), anyRule)).Evaluate(in).Allowed {
		t.Error("matched without a filter state")
	}
	if e := compileJSON(t, allowIf(upstreamMatcher(`"upstream_port_range":{"start":0,"end":65535}`), anyRule)); e.Needs()&NeedFilterState == 0 {
		t.Error("the matcher does not ask for the filter state")
	}
}

func TestUpstreamIPPortErrors(t *testing.T) {
	for fields, want := range map[string]string{
		`"upstream_ip":null`: "matcher.typed_config: Invalid UpstreamIpPortMatcher configuration - missing `upstream_ip` and/or `upstream_port_range`",
		`"upstream_ip":{"address_prefix":"x","prefix_len":8}`: `matcher.typed_config.upstream_ip.address_prefix: "x" is not an IP address`,
	} {
		r := &rbacv3.RBAC{}
		if err := protojson.Unmarshal([]byte(allowIf(upstreamMatcher(fields), anyRule)), r); err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(r); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", fields, err, want)
		}
	}
}
