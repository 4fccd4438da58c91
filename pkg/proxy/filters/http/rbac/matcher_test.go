package rbac

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// refererSandbox is the matcher of Envoy's rbac sandbox
// (envoyproxy/examples rbac/envoy.yaml): requests whose referer is not
// Envoy's documentation are denied by "illegal-referer".
const refererSandbox = `{"matcher":{
	"matcher_list":{"matchers":[{
		"predicate":{"not_matcher":{"single_predicate":{
			"input":{"name":"envoy.matching.inputs.request_headers","typed_config":{"@type":"type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput","header_name":"referer"}},
			"value_match":{"safe_regex":{"google_re2":{},"regex":"https?://(www.)?envoyproxy.io/docs/envoy.*"}}}}},
		"on_match":{"action":{"name":"action","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"illegal-referer","action":"DENY"}}}}]},
	"on_no_match":{"action":{"name":"action","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"all-pass","action":"ALLOW"}}}}}`

// rbacAction is an on_match action of the matcher form.
func rbacAction(name, action string) string {
	return `{"action":{"name":"a","typed_config":{"@type":"type.googleapis.com/envoy.config.rbac.v3.Action","name":"` + name + `","action":"` + action + `"}}}`
}

// input is a matcher input of the type, with its fields.
func input(typ, fields string) string {
	return `{"name":"i","typed_config":{"@type":"type.googleapis.com/` + typ + `"` + fields + `}}`
}

func TestMatcherSandbox(t *testing.T) {
	f, c := compileFilter(t, refererSandbox)
	s := httpfiltertest.NewStream("GET", "/", "referer", "https://www.envoyproxy.io/docs/envoy/latest")
	if f.DecodeHeaders(s) != httpfilter.Continue {
		t.Errorf("the documentation's referer was denied: %+v", s.Reply)
	}
	for _, s := range []*httpfiltertest.Stream{
		httpfiltertest.NewStream("GET", "/", "referer", "https://example.com/"),
		httpfiltertest.NewStream("GET", "/"), // no referer: the not_matcher holds
	} {
		if f.DecodeHeaders(s) != httpfilter.Stop {
			t.Fatal("a foreign referer was let through")
		}
		want := httpfiltertest.LocalReply{Status: 403, Body: "RBAC: access denied", Details: "rbac_access_denied_matched_policy[illegal-referer]"}
		if *s.Reply != want {
			t.Errorf("reply %+v, want %+v", *s.Reply, want)
		}
	}
	if a, d := c.store.Counter("http.in.rbac.allowed").Value(), c.store.Counter("http.in.rbac.denied").Value(); a != 1 || d != 2 {
		t.Errorf("allowed %d denied %d, want 1 and 2", a, d)
	}
}

// TestMatcherSourceIP allows 10.0.0.0/8 by the IP matcher on the
// client's address as the connection manager trusts it (here the
// x-forwarded-for entry it picked), as Envoy's HTTP matching data gives
// it, and denies everything else by default (no on_no_match).
func TestMatcherSourceIP(t *testing.T) {
	f, _ := compileFilter(t, `{"matcher":{"matcher_tree":{
		"input":`+input("envoy.extensions.matching.common_inputs.network.v3.SourceIPInput", "")+`,
		"custom_match":{"name":"ip","typed_config":{"@type":"type.googleapis.com/xds.type.matcher.v3.IPMatcher","range_matchers":[
			{"ranges":[{"address_prefix":"10.0.0.0","prefix_len":8}],"on_match":`+rbacAction("internal", "ALLOW")+`},
			{"ranges":[{"address_prefix":"10.6.6.0","prefix_len":24}],"on_match":`+rbacAction("quarantine", "DENY")+`}]}}}}}`)
	run := func(source, xff string) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/")
		s.Remote = xff
		s.StreamInfo.RemoteAddress, s.StreamInfo.DirectRemoteAddress, s.StreamInfo.LocalAddress = source, source, "127.0.0.1:80"
		f.DecodeHeaders(s)
		return s
	}
	if s := run("10.1.2.3:4000", "10.1.2.3"); s.Reply != nil {
		t.Errorf("10.1.2.3 was denied: %+v", s.Reply)
	}
	if s := run("10.1.2.3:4000", "192.0.2.1"); s.Reply == nil || s.Reply.Details != "rbac_access_denied_matched_policy[none]" {
		t.Errorf("10.1.2.3 forwarding for 192.0.2.1: reply %+v, want a denial by no policy", s.Reply)
	}
	if s := run("10.6.6.6:4000", "10.6.6.6"); s.Reply == nil || s.Reply.Details != "rbac_access_denied_matched_policy[quarantine]" {
		t.Errorf("10.6.6.6: reply %+v, want a denial by quarantine", s.Reply)
	}
	if s := run("192.0.2.1:4000", "10.1.2.3"); s.Reply != nil {
		t.Errorf("192.0.2.1 forwarding for 10.1.2.3 was denied: %+v", s.Reply)
	}
}

// TestMatcherInputs reads each input Envoy allows the HTTP filter.
func TestMatcherInputs(t *testing.T) {
	u, _ := url.Parse("spiffe://mesh/web")
	cert := &x509.Certificate{URIs: []*url.URL{u}, DNSNames: []string{"web.mesh", "web"}, Subject: pkix.Name{CommonName: "web", Organization: []string{"mesh"}}}
	stream := func(tls bool) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("POST", "/api", "x-team", "blue")
		s.StreamInfo.RemoteAddress, s.StreamInfo.LocalAddress, s.StreamInfo.DirectRemoteAddress = "192.0.2.7:4321", "127.0.0.1:8443", "127.0.0.9:999"
		s.Remote = "192.0.2.7" // no x-forwarded-for: the connection's
		s.StreamInfo.RequestedServerName = "api.example.com"
		if tls {
			s.StreamInfo.TLS = &accesslog.TLSInfo{PeerCertificate: cert}
		}
		return s
	}
	const network, ssl = "envoy.extensions.matching.common_inputs.network.v3.", "envoy.extensions.matching.common_inputs.ssl.v3."
	for _, tc := range []struct {
		input, value string
		tls          bool
	}{
		{input("envoy.type.matcher.v3.HttpRequestHeaderMatchInput", `,"header_name":"X-Team"`), "blue", false},
		{input("envoy.type.matcher.v3.HttpRequestHeaderMatchInput", `,"header_name":":method"`), "POST", false},
		{input(network+"SourceIPInput", ""), "192.0.2.7", false},
		{input(network+"SourcePortInput", ""), "4321", false},
		{input(network+"DestinationIPInput", ""), "127.0.0.1", false},
		{input(network+"DestinationPortInput", ""), "8443", false},
		{input(network+"DirectSourceIPInput", ""), "127.0.0.9", false},
		{input(network+"ServerNameInput", ""), "api.example.com", false},
		{input(ssl+"UriSanInput", ""), "spiffe://mesh/web", true},
		{input(ssl+"DnsSanInput", ""), "web.mesh,web", true},
		{input(ssl+"SubjectInput", ""), "CN=web,O=mesh", true},
	} {
		js := `{"matcher":{"matcher_tree":{"input":` + tc.input + `,"exact_match_map":{"map":{"` + tc.value + `":` + rbacAction("hit", "ALLOW") + `}}},
			"on_no_match":` + rbacAction("miss", "DENY") + `}}`
		f, _ := compileFilter(t, js)
		s := stream(tc.tls)
		if f.DecodeHeaders(s) != httpfilter.Continue {
			t.Errorf("%s: %q did not match (reply %+v)", tc.input, tc.value, s.Reply)
		}
		if tc.tls {
			// Without TLS the input cannot read the connection: the
			// match is unable to complete and denies, on_no_match
			// notwithstanding.
			s := stream(false)
			if f.DecodeHeaders(s) != httpfilter.Stop || s.Reply.Details != "rbac_access_denied_matched_policy[none]" {
				t.Errorf("%s on plaintext: reply %+v, want a denial by no policy", tc.input, s.Reply)
			}
		}
	}
}

// TestMatcherShadowAndLog checks the shadow matcher's stats and dynamic
// metadata, and the access log hint of a tree with a LOG action.
func TestMatcherShadowAndLog(t *testing.T) {
	header := input("envoy.type.matcher.v3.HttpRequestHeaderMatchInput", `,"header_name":"x-mode"`)
	f, c := compileFilter(t, `{
		"matcher":{"matcher_tree":{"input":`+header+`,"exact_match_map":{"map":{"audit":`+rbacAction("audited", "LOG")+`}}},"on_no_match":`+rbacAction("rest", "ALLOW")+`},
		"shadow_matcher":{"matcher_tree":{"input":`+header+`,"exact_match_map":{"map":{"bad":`+rbacAction("would-deny", "DENY")+`}}},"on_no_match":`+rbacAction("fine", "ALLOW")+`},
		"shadow_rules_stat_prefix":"dry_"}`)
	run := func(mode string) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/", "x-mode", mode)
		if f.DecodeHeaders(s) != httpfilter.Continue {
			t.Fatalf("x-mode %s was denied", mode)
		}
		return s
	}
	field := func(s *httpfiltertest.Stream, ns, key string) any {
		st := s.Metadata.GetFilterMetadata()[ns]
		if v, ok := st.GetFields()[key]; ok {
			return v.AsInterface()
		}
		return nil
	}
	s := run("bad")
	if got := field(s, "envoy.filters.http.rbac", "dry_shadow_engine_result"); got != "denied" {
		t.Errorf("shadow result %v, want denied", got)
	}
	if got := field(s, "envoy.filters.http.rbac", "dry_shadow_effective_policy_id"); got != "would-deny" {
		t.Errorf("shadow policy %v, want would-deny", got)
	}
	if got := field(s, "envoy.common", "access_log_hint"); got != false {
		t.Errorf("access_log_hint %v, want false", got)
	}
	s = run("audit")
	if got := field(s, "envoy.filters.http.rbac", "dry_shadow_effective_policy_id"); got != "fine" {
		t.Errorf("shadow policy %v, want fine (on_no_match's action)", got)
	}
	if got := field(s, "envoy.common", "access_log_hint"); got != true {
		t.Errorf("access_log_hint %v, want true", got)
	}
	for name, want := range map[string]uint64{
		"http.in.rbac.allowed": 2, "http.in.rbac.denied": 0,
		"http.in.rbac.dry_.shadow_allowed": 1, "http.in.rbac.dry_.shadow_denied": 1,
	} {
		if got := c.store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// TestMatcherPerRoute replaces the filter's rules with a route's matcher.
func TestMatcherPerRoute(t *testing.T) {
	f, _ := compileFilter(t, `{"rules":{"action":"DENY","policies":{"all":{"permissions":[{"any":true}],"principals":[{"any":true}]}}}}`)
	blueOnly := routeConfig(t, `{"rbac":{"matcher":{"matcher_tree":{
		"input":`+input("envoy.type.matcher.v3.HttpRequestHeaderMatchInput", `,"header_name":"x-team"`)+`,
		"exact_match_map":{"map":{"blue":`+rbacAction("blue team", "ALLOW")+`}}}}}}`)
	run := func(team string) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/x", "x-team", team)
		s.PerRoute = map[string][]httpfilter.RouteConfig{"rbac": {blueOnly}}
		f.DecodeHeaders(s)
		return s
	}
	if s := run("blue"); s.Reply != nil {
		t.Errorf("the route's matcher did not allow the blue team: %+v", s.Reply)
	}
	if s := run("red"); s.Reply == nil || s.Reply.Details != "rbac_access_denied_matched_policy[none]" {
		t.Errorf("the red team: reply %+v, want a denial by no policy", s.Reply)
	}
}
