package rbac

import (
	"crypto/x509"
	"net/url"
	"reflect"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// adminOnly allows /admin only to 10.0.0.0/8 and everything else to
// anyone; its shadow rules would deny GETs.
const adminOnly = `{
	"rules":{"action":"ALLOW","policies":{
		"admin":{"permissions":[{"url_path":{"path":{"prefix":"/admin"}}}],"principals":[{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}]},
		"public":{"permissions":[{"not_rule":{"url_path":{"path":{"prefix":"/admin"}}}}],"principals":[{"any":true}]}}},
	"shadow_rules":{"action":"DENY","policies":{
		"no gets":{"permissions":[{"header":{"name":":method","string_match":{"exact":"GET"}}}],"principals":[{"any":true}]}}},
	"shadow_rules_stat_prefix":"dry_"}`

// routeConfig compiles a per-route configuration written in JSON.
func routeConfig(t *testing.T, js string) httpfilter.RouteConfig {
	t.Helper()
	p := &httprbacv3.RBACPerRoute{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatal(err)
	}
	rc, err := Factory{}.CompileRoute(p, httpfilter.Context{Name: "rbac"})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestDecide(t *testing.T) {
	f, c := compileFilter(t, adminOnly)
	store := c.store
	run := func(method, path, remote string) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream(method, path)
		s.Remote = remote
		s.StreamInfo.RemoteAddress, s.StreamInfo.LocalAddress = "127.0.0.1:5000", "127.0.0.1:80"
		return s
	}
	// Allowed by "public"; the shadow rules count a denial.
	if s := run("GET", "/x", "192.0.2.1"); f.DecodeHeaders(s) != httpfilter.Continue || s.Reply != nil {
		t.Fatal("GET /x was not let through")
	}
	// /admin from outside 10/8: denied, no policy matched.
	s := run("POST", "/admin/users", "192.0.2.1")
	if f.DecodeHeaders(s) != httpfilter.Stop {
		t.Fatal("POST /admin from outside was let through")
	}
	want := httpfiltertest.LocalReply{Status: 403, Body: "RBAC: access denied", Details: "rbac_access_denied_matched_policy[none]"}
	if s.Reply == nil || *s.Reply != want {
		t.Errorf("reply %+v, want %+v", s.Reply, want)
	}
	// /admin from 10/8 (the address x-forwarded-for gave): allowed.
	if s := run("POST", "/admin/users", "10.1.1.1"); f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("POST /admin from 10/8 was denied")
	}
	for name, want := range map[string]uint64{
		"http.in.rbac.allowed":             2,
		"http.in.rbac.denied":              1,
		"http.in.rbac.dry_.shadow_denied":  1,
		"http.in.rbac.dry_.shadow_allowed": 2,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestDenyPolicyDetails(t *testing.T) {
	f, _ := compileFilter(t, `{"rules":{"action":"DENY","policies":{"block curl":{"permissions":[{"any":true}],"principals":[{"header":{"name":"user-agent","string_match":{"prefix":"curl/"}}}]}}}}`)
	s := httpfiltertest.NewStream("GET", "/", "user-agent", "curl/8.0")
	if f.DecodeHeaders(s) != httpfilter.Stop || s.Reply.Details != "rbac_access_denied_matched_policy[block_curl]" {
		t.Errorf("reply %+v, want a denial by block_curl", s.Reply)
	}
	if s.Reply.Flags != accesslog.ResponseFlags(0) {
		t.Errorf("response flags %v, want none (Envoy sets none for RBAC)", s.Reply.Flags)
	}
}

func TestPerRoute(t *testing.T) {
	f, c := compileFilter(t, `{"rules":{"action":"DENY","policies":{"all":{"permissions":[{"any":true}],"principals":[{"any":true}]}}}}`)
	// An RBACPerRoute without rbac disables the filter on its route.
	s := httpfiltertest.NewStream("GET", "/open")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"rbac": {routeConfig(t, `{}`)}}
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("the disabled route was denied")
	}
	// One with rbac replaces the rules.
	s = httpfiltertest.NewStream("GET", "/mixed")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"rbac": {routeConfig(t, `{"rbac":{"rules":{"action":"ALLOW","policies":{"gets":{"permissions":[{"header":{"name":":method","string_match":{"exact":"GET"}}}],"principals":[{"any":true}]}}}}}`)}}
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("the route's rules did not allow a GET")
	}
	// Without per-route configuration, the filter's rules deny.
	if f.DecodeHeaders(httpfiltertest.NewStream("GET", "/")) != httpfilter.Stop {
		t.Error("the filter's rules did not deny")
	}
	if c.stats.Allowed.Value() != 1 || c.stats.Denied.Value() != 1 {
		t.Errorf("allowed %d denied %d, want 1 and 1 (a disabled route counts nothing)", c.stats.Allowed.Value(), c.stats.Denied.Value())
	}
}

func TestAuthenticatedPeer(t *testing.T) {
	f, _ := compileFilter(t, `{"rules":{"action":"ALLOW","policies":{"mesh":{"permissions":[{"any":true}],"principals":[{"authenticated":{"principal_name":{"exact":"spiffe://mesh/ns/a/sa/web"}}}]}}}}`)
	u, _ := url.Parse("spiffe://mesh/ns/a/sa/web")
	cert := &x509.Certificate{URIs: []*url.URL{u}}
	s := httpfiltertest.NewStream("GET", "/")
	if f.DecodeHeaders(s) != httpfilter.Stop {
		t.Error("a plaintext request was allowed")
	}
	s = httpfiltertest.NewStream("GET", "/")
	s.StreamInfo.TLS = &accesslog.TLSInfo{PeerCertificate: cert}
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("the mesh peer was denied")
	}
	// The identity is kept on the connection: a second request reads it.
	s.Reply = nil
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("the mesh peer's second request was denied")
	}
}

func TestCompileRefusals(t *testing.T) {
	for js, want := range map[string]string{
		`{"matcher":{},"rules":{}}`:               "rules: set with matcher, which would be ignored",
		`{"shadow_matcher":{},"shadow_rules":{}}`: "shadow_rules: set with shadow_matcher",
		`{"matcher":{"on_no_match":{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"x"}}}}}`:                                                                       "matcher.on_no_match.action.typed_config: action google.protobuf.StringValue is not an RBAC action",
		`{"shadow_matcher":{"matcher_tree":{"input":{"name":"t","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.TransportProtocolInput"}},"exact_match_map":{"map":{}}}}}`: "shadow_matcher.matcher_tree.input.typed_config: the RBAC HTTP filter cannot match on envoy.extensions.matching.common_inputs.network.v3.TransportProtocolInput",
		`{"rules":{"policies":{"p":{"permissions":[{"url_path":{"path":{"safe_regex":{"regex":"+"}}}}],"principals":[{"any":true}]}}}}`:                                                                                    `rules.policies["p"].permissions[0].url_path.path.safe_regex.regex: `,
		`{"shadow_rules":{"policies":{"p":{"permissions":[{"any":true}],"principals":[{"remote_ip":{"address_prefix":"x"}}]}}}}`:                                                                                           `shadow_rules.policies["p"].principals[0].remote_ip.address_prefix: "x" is not an IP address`,
	} {
		if _, err := compileFilterErr(js); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", js, err, want)
		}
	}
	for js, want := range map[string]string{
		`{"rbac":{"rules_stat_prefix":"x"}}`: "rbac.rules_stat_prefix: not supported per route",
		`{"rbac":{"matcher":{"matcher_tree":{"input":{"name":"m","typed_config":{"@type":"type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput","filter":"f"}},"exact_match_map":{"map":{}}}}}}`: "rbac.matcher.matcher_tree.input.typed_config: input envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput is not supported by Outrigger",
	} {
		p := &httprbacv3.RBACPerRoute{}
		if err := protojson.Unmarshal([]byte(js), p); err != nil {
			t.Fatal(err)
		}
		if _, err := (Factory{}).CompileRoute(p, httpfilter.Context{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", js, err, want)
		}
	}
}

func TestRouteMetadata(t *testing.T) {
	f, _ := compileFilter(t, `{"rules":{"action":"ALLOW","policies":{"gold":{"permissions":[{"sourced_metadata":{"metadata_source":"ROUTE",
		"metadata_matcher":{"filter":"tiers","path":[{"key":"tier"}],"value":{"string_match":{"exact":"gold"}}}}}],"principals":[{"any":true}]}}}}`)
	st, err := structpb.NewStruct(map[string]any{"tier": "gold"})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	s.Matched = &router.Route{Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"tiers": st}}}
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("a request on the gold route was denied")
	}
	if f.DecodeHeaders(httpfiltertest.NewStream("GET", "/")) != httpfilter.Stop {
		t.Error("a request without a route was allowed")
	}
}

func TestDynamicMetadata(t *testing.T) {
	f, _ := compileFilter(t, adminOnly)
	s := httpfiltertest.NewStream("GET", "/x")
	s.Remote = "192.0.2.1"
	f.DecodeHeaders(s)
	got := s.Metadata.GetFilterMetadata()["envoy.filters.http.rbac"].AsMap()
	want := map[string]any{"dry_shadow_engine_result": "denied", "dry_shadow_effective_policy_id": "no gets"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metadata %v, want %v", got, want)
	}
	s = httpfiltertest.NewStream("PUT", "/x")
	s.Remote = "192.0.2.1"
	f.DecodeHeaders(s)
	got = s.Metadata.GetFilterMetadata()["envoy.filters.http.rbac"].AsMap()
	if want := map[string]any{"dry_shadow_engine_result": "allowed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("metadata %v, want %v", got, want)
	}

	// LOG: the access_log_hint, and a metadata principal reading what an
	// earlier filter recorded.
	f, _ = compileFilter(t, `{"rules":{"action":"LOG","policies":{"audited":{"permissions":[{"any":true}],
		"principals":[{"metadata":{"filter":"auth","path":[{"key":"user"}],"value":{"string_match":{"exact":"root"}}}}]}}}}`)
	for user, hint := range map[string]bool{"root": true, "guest": false} {
		s := httpfiltertest.NewStream("GET", "/")
		st, err := structpb.NewStruct(map[string]any{"user": user})
		if err != nil {
			t.Fatal(err)
		}
		s.SetDynamicMetadata("auth", st)
		if f.DecodeHeaders(s) != httpfilter.Continue {
			t.Errorf("%s: LOG denied a request", user)
		}
		got := s.Metadata.GetFilterMetadata()["envoy.common"].AsMap()
		if want := map[string]any{"access_log_hint": hint}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: metadata %v, want %v", user, got, want)
		}
	}
}

func TestRouteShadowMetadataKeys(t *testing.T) {
	f, c := compileFilter(t, `{"shadow_rules":{"action":"DENY"},"shadow_rules_stat_prefix":"filter_"}`)
	shadow := `{"shadow_rules":{"action":"ALLOW"}`
	for name, tc := range map[string]struct{ perRoute, key string }{
		"the filter's prefix":    {`{"rbac":` + shadow + `}}`, "filter_shadow_engine_result"},
		"the route's own":        {`{"rbac":` + shadow + `,"shadow_rules_stat_prefix":"route_"}}`, "route_shadow_engine_result"},
		"no route configuration": {"", "filter_shadow_engine_result"},
	} {
		s := httpfiltertest.NewStream("GET", "/")
		if tc.perRoute != "" {
			s.PerRoute = map[string][]httpfilter.RouteConfig{"rbac": {routeConfig(t, tc.perRoute)}}
		}
		f.DecodeHeaders(s)
		got := s.Metadata.GetFilterMetadata()["envoy.filters.http.rbac"].AsMap()
		// No policy matches: the engine result is the only field.
		if _, ok := got[tc.key]; !ok || len(got) != 1 {
			t.Errorf("%s: metadata %v, want one field %s", name, got, tc.key)
		}
	}
	// The filter's stats count the routes' shadow rules (an ALLOW
	// without policies denies; the filter's DENY without policies
	// allows).
	if c.store.Counter("http.in.rbac.filter_.shadow_denied").Value() != 2 {
		t.Errorf("shadow_denied = %d, want 2", c.store.Counter("http.in.rbac.filter_.shadow_denied").Value())
	}
}

func TestFilterStatePrincipal(t *testing.T) {
	f, _ := compileFilter(t, `{"rules":{"action":"ALLOW","policies":{"sni":{"permissions":[{"any":true}],
		"principals":[{"filter_state":{"key":"envoy.network.upstream_server_name","string_match":{"suffix":".internal"}}}]}}}}`)
	s := httpfiltertest.NewStream("GET", "/")
	// A network filter's value, kept on the connection.
	s.ConnFilterState = map[string]any{"envoy.network.upstream_server_name": "api.internal"}
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Error("a request whose connection's filter state matches was denied")
	}
	s = httpfiltertest.NewStream("GET", "/")
	s.ConnFilterState = map[string]any{"envoy.network.upstream_server_name": "api.example.com"}
	if f.DecodeHeaders(s) != httpfilter.Stop {
		t.Error("a request whose filter state does not match was allowed")
	}
	if f.DecodeHeaders(httpfiltertest.NewStream("GET", "/")) != httpfilter.Stop {
		t.Error("a request without the filter state was allowed")
	}
}
