package rbacengine

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// compileJSON compiles an RBAC written in its JSON form.
func compileJSON(t testing.TB, js string) *Engine {
	t.Helper()
	r := &rbacv3.RBAC{}
	if err := protojson.Unmarshal([]byte(js), r); err != nil {
		t.Fatalf("unmarshal %s: %v", js, err)
	}
	if err := r.ValidateAll(); err != nil {
		t.Fatalf("validate %s: %v", js, err)
	}
	e, err := Compile(r)
	if err != nil {
		t.Fatalf("compile %s: %v", js, err)
	}
	return e
}

// headers is a request header map for the tests.
type headers map[string]string

func (h headers) Get(name string) (string, bool) {
	v, ok := h[name]
	return v, ok
}

// allowIf is an ALLOW RBAC of one policy "p" with one permission and one
// principal, in JSON.
func allowIf(permission, principal string) string {
	return `{"action":"ALLOW","policies":{"p":{"permissions":[` + permission + `],"principals":[` + principal + `]}}}`
}

const anyRule = `{"any":true}`

// request is a GET /api?x=1 to example.com from 10.1.2.3 on the
// connection 192.168.0.9:5555 -> 127.0.0.1:8080, forwarded for 10.1.2.3.
func request() *Input {
	return &Input{
		Request: &router.Request{Method: "GET", Path: "/api/v1?x=1", Host: "example.com", Headers: headers{"x-team": "blue"}},
		Local:   netip.MustParseAddrPort("127.0.0.1:8080"),
		// A PROXY protocol header restored 192.168.0.9 from the
		// physical peer 127.0.0.2.
		DirectRemote: netip.MustParseAddr("127.0.0.2"),
		Source:       netip.MustParseAddr("192.168.0.9"),
		Remote:       netip.MustParseAddr("10.1.2.3"),
		ServerName:   "api.example.com",
	}
}

// withPeer is in on a TLS connection whose client certificate has the
// given identity.
func withPeer(in *Input, uri, dns, cn string) *Input {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: []string{"acme"}}}
	if uri != "" {
		u, _ := url.Parse(uri)
		c.URIs = []*url.URL{u}
	}
	if dns != "" {
		c.DNSNames = []string{dns}
	}
	in.TLS, in.Peer = true, NewPeer(c)
	return in
}

// uriTemplate is a uri_template permission, for fmt.Sprintf with the
// path_template.
const uriTemplate = `{"uri_template":{"name":"envoy.path.match.uri_template.uri_template_matcher","typed_config":{"@type":"type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig","path_template":"%s"}}}`

// plainObject is a filter state object whose PLAIN form is itself;
// noPlain one without a PLAIN form.
type (
	plainObject string
	noPlain     struct{}
)

func (p plainObject) FilterStateString() (string, bool) { return string(p), true }
func (noPlain) FilterStateString() (string, bool)       { return "", false }

// withState is a request whose filter state holds v under "team".
func withState(v any) func() *Input {
	return func() *Input {
		in := request()
		in.FilterState = func(key string) (any, bool) { return v, key == "team" }
		return in
	}
}

func TestPermissionsAndPrincipals(t *testing.T) {
	tls := func(uri, dns, cn string) func() *Input {
		return func() *Input { return withPeer(request(), uri, dns, cn) }
	}
	tlsNoCert := func() *Input { in := request(); in.TLS = true; return in }
	connection := func() *Input { in := request(); in.Request = nil; return in }
	withRoute := func() *Input {
		in := request()
		st, _ := structpb.NewStruct(map[string]any{"tier": "gold"})
		in.HasRoute, in.RouteMetadata = true, &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"rt": st}}
		return in
	}
	withMetadata := func() *Input {
		in := request()
		st, _ := structpb.NewStruct(map[string]any{"role": "admin"})
		in.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"auth": st}}
		return in
	}
	tests := map[string]struct {
		permission, principal string
		in                    func() *Input // request() when nil
		want                  bool
	}{
		"any":                                   {anyRule, anyRule, nil, true},
		"header method":                         {`{"header":{"name":":method","string_match":{"exact":"GET"}}}`, anyRule, nil, true},
		"header method mismatch":                {`{"header":{"name":":method","string_match":{"exact":"POST"}}}`, anyRule, nil, false},
		"header on a connection":                {`{"header":{"name":"x-team","present_match":true}}`, anyRule, connection, false},
		"inverted header on connection":         {`{"header":{"name":"x-team","present_match":true,"invert_match":true}}`, anyRule, connection, true},
		"url_path without query":                {`{"url_path":{"path":{"exact":"/api/v1"}}}`, anyRule, nil, true},
		"url_path prefix":                       {`{"url_path":{"path":{"prefix":"/admin"}}}`, anyRule, nil, false},
		"url_path on a connection":              {`{"url_path":{"path":{"prefix":"/"}}}`, anyRule, connection, false},
		"uri_template":                          {fmt.Sprintf(uriTemplate, "/api/{version}"), anyRule, nil, true},
		"uri_template other":                    {fmt.Sprintf(uriTemplate, "/api/{version}/{x}"), anyRule, nil, false},
		"uri_template glob":                     {fmt.Sprintf(uriTemplate, "/**"), anyRule, nil, true},
		"uri_template on a connection":          {fmt.Sprintf(uriTemplate, "/**"), anyRule, connection, false},
		"destination_ip":                        {`{"destination_ip":{"address_prefix":"127.0.0.0","prefix_len":8}}`, anyRule, nil, true},
		"destination_ip other":                  {`{"destination_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}`, anyRule, nil, false},
		"destination_port":                      {`{"destination_port":8080}`, anyRule, nil, true},
		"destination_port other":                {`{"destination_port":80}`, anyRule, nil, false},
		"destination_port_range":                {`{"destination_port_range":{"start":8000,"end":8081}}`, anyRule, nil, true},
		"destination_port_range end":            {`{"destination_port_range":{"start":8000,"end":8080}}`, anyRule, nil, false},
		"metadata absent":                       {`{"metadata":{"filter":"auth","path":[{"key":"role"}],"value":{"string_match":{"exact":"admin"}}}}`, anyRule, nil, false},
		"metadata absent inverted":              {`{"metadata":{"filter":"auth","path":[{"key":"role"}],"value":{"string_match":{"exact":"admin"}},"invert":true}}`, anyRule, nil, true},
		"metadata present":                      {`{"metadata":{"filter":"auth","path":[{"key":"role"}],"value":{"string_match":{"exact":"admin"}}}}`, anyRule, withMetadata, true},
		"sourced_metadata route":                {`{"sourced_metadata":{"metadata_matcher":{"filter":"rt","path":[{"key":"tier"}],"value":{"string_match":{"exact":"gold"}}},"metadata_source":"ROUTE"}}`, anyRule, withRoute, true},
		"sourced_metadata route is not dynamic": {`{"sourced_metadata":{"metadata_matcher":{"filter":"auth","path":[{"key":"role"}],"value":{"present_match":true}},"metadata_source":"ROUTE"}}`, anyRule, withMetadata, false},
		"sourced_metadata no route, inverted":   {`{"sourced_metadata":{"metadata_matcher":{"filter":"rt","path":[{"key":"tier"}],"value":{"present_match":true},"invert":true},"metadata_source":"ROUTE"}}`, anyRule, nil, false},
		"sourced_metadata dynamic":              {anyRule, `{"sourced_metadata":{"metadata_matcher":{"filter":"auth","path":[{"key":"role"}],"value":{"string_match":{"exact":"admin"}}}}}`, withMetadata, true},
		"not_rule":                              {`{"not_rule":{"destination_port":80}}`, anyRule, nil, true},
		"and_rules":                             {`{"and_rules":{"rules":[{"destination_port":8080},{"url_path":{"path":{"prefix":"/admin"}}}]}}`, anyRule, nil, false},
		"or_rules":                              {`{"or_rules":{"rules":[{"destination_port":80},{"url_path":{"path":{"prefix":"/api"}}}]}}`, anyRule, nil, true},
		"requested_server_name":                 {`{"requested_server_name":{"suffix":".example.com"}}`, anyRule, nil, true},
		"requested_server_name other":           {`{"requested_server_name":{"exact":"other"}}`, anyRule, nil, false},

		"source_ip is the restored address":     {anyRule, `{"source_ip":{"address_prefix":"192.168.0.0","prefix_len":16}}`, nil, true},
		"direct_remote_ip is the socket's peer": {anyRule, `{"direct_remote_ip":{"address_prefix":"127.0.0.2","prefix_len":32}}`, nil, true},
		"direct_remote_ip not the restored":     {anyRule, `{"direct_remote_ip":{"address_prefix":"192.168.0.0","prefix_len":16}}`, nil, false},
		"remote_ip is x-forwarded-for's":        {anyRule, `{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}`, nil, true},
		"remote_ip not the socket's":            {anyRule, `{"remote_ip":{"address_prefix":"127.0.0.0","prefix_len":8}}`, nil, false},
		"ipv6 range, ipv4 client":               {anyRule, `{"remote_ip":{"address_prefix":"::","prefix_len":0}}`, nil, false},
		"header principal":                      {anyRule, `{"header":{"name":"x-team","string_match":{"exact":"blue"}}}`, nil, true},
		"url_path principal":                    {anyRule, `{"url_path":{"path":{"prefix":"/api/"}}}`, nil, true},
		"metadata principal":                    {anyRule, `{"metadata":{"filter":"auth","path":[{"key":"role"}],"value":{"present_match":true}}}`, withMetadata, true},
		"not_id":                                {anyRule, `{"not_id":{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}}`, nil, false},
		"and_ids":                               {anyRule, `{"and_ids":{"ids":[{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}},{"header":{"name":"x-team","present_match":true}}]}}`, nil, true},
		"or_ids":                                {anyRule, `{"or_ids":{"ids":[{"remote_ip":{"address_prefix":"11.0.0.0","prefix_len":8}},{"header":{"name":"x-other","present_match":true}}]}}`, nil, false},

		"authenticated plaintext":           {anyRule, `{"authenticated":{}}`, nil, false},
		"authenticated any TLS":             {anyRule, `{"authenticated":{}}`, tlsNoCert, true},
		"authenticated no cert, empty name": {anyRule, `{"authenticated":{"principal_name":{"exact":""}}}`, tlsNoCert, true},
		"authenticated no cert":             {anyRule, `{"authenticated":{"principal_name":{"prefix":"spiffe://"}}}`, tlsNoCert, false},
		"authenticated URI SAN":             {anyRule, `{"authenticated":{"principal_name":{"exact":"spiffe://cluster.local/ns/a/sa/b"}}}`, tls("spiffe://cluster.local/ns/a/sa/b", "b.example", "b"), true},
		"authenticated DNS SAN":             {anyRule, `{"authenticated":{"principal_name":{"exact":"b.example"}}}`, tls("spiffe://x", "b.example", "b"), true},
		"authenticated subject":             {anyRule, `{"authenticated":{"principal_name":{"exact":"CN=b,O=acme"}}}`, tls("spiffe://x", "b.example", "b"), true},
		"authenticated other":               {anyRule, `{"authenticated":{"principal_name":{"exact":"c.example"}}}`, tls("spiffe://x", "b.example", "b"), false},

		"filter_state object":      {anyRule, `{"filter_state":{"key":"team","string_match":{"exact":"payments"}}}`, withState(plainObject("payments")), true},
		"filter_state other value": {anyRule, `{"filter_state":{"key":"team","string_match":{"exact":"payments"}}}`, withState(plainObject("search")), false},
		"filter_state no PLAIN":    {anyRule, `{"filter_state":{"key":"team","string_match":{"safe_regex":{"regex":".*"}}}}`, withState(noPlain{}), false},
		"filter_state connection":  {anyRule, `{"filter_state":{"key":"team","string_match":{"prefix":"pay"}}}`, withState("payments"), true},
		"filter_state absent":      {anyRule, `{"filter_state":{"key":"team","string_match":{"safe_regex":{"regex":".*"}}}}`, nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := compileJSON(t, allowIf(tc.permission, tc.principal))
			in := request()
			if tc.in != nil {
				in = tc.in()
			}
			d := e.Evaluate(in)
			if d.Matched != tc.want || d.Allowed != tc.want {
				t.Errorf("matched %v allowed %v, want %v", d.Matched, d.Allowed, tc.want)
			}
		})
	}
}

func TestActions(t *testing.T) {
	const policies = `"policies":{
		"b-api":{"permissions":[{"url_path":{"path":{"prefix":"/api"}}}],"principals":[{"any":true}]},
		"a api v1":{"permissions":[{"url_path":{"path":{"prefix":"/api/v1"}}}],"principals":[{"any":true}]},
		"c-admin":{"permissions":[{"url_path":{"path":{"prefix":"/admin"}}}],"principals":[{"any":true}]}}`
	tests := map[string]struct {
		action, path     string
		allowed, matched bool
		policy, details  string
	}{
		// Policies run in name order: "a api v1" before "b-api".
		"allow, matched":  {"ALLOW", "/api/v1/x", true, true, "a api v1", "rbac_access_denied_matched_policy[a_api_v1]"},
		"allow, no match": {"ALLOW", "/other", false, false, "", "rbac_access_denied_matched_policy[none]"},
		"deny, matched":   {"DENY", "/api/v2", false, true, "b-api", "rbac_access_denied_matched_policy[b-api]"},
		"deny, no match":  {"DENY", "/other", true, false, "", "rbac_access_denied_matched_policy[none]"},
		"log, matched":    {"LOG", "/admin", true, true, "c-admin", "rbac_access_denied_matched_policy[c-admin]"},
		"log, no match":   {"LOG", "/other", true, false, "", "rbac_access_denied_matched_policy[none]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := compileJSON(t, `{"action":"`+tc.action+`",`+policies+`}`)
			in := request()
			in.Request.Path = tc.path
			d := e.Evaluate(in)
			if d.Allowed != tc.allowed || d.Matched != tc.matched || d.Policy != tc.policy || d.Details() != tc.details {
				t.Errorf("got allowed %v matched %v policy %q details %q, want %v %v %q %q",
					d.Allowed, d.Matched, d.Policy, d.Details(), tc.allowed, tc.matched, tc.policy, tc.details)
			}
		})
	}
}

func TestNoPolicies(t *testing.T) {
	if d := compileJSON(t, `{"action":"ALLOW"}`).Evaluate(request()); d.Allowed {
		t.Error("an ALLOW without policies let a request through")
	}
	if d := compileJSON(t, `{"action":"DENY"}`).Evaluate(request()); !d.Allowed {
		t.Error("a DENY without policies refused a request")
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct{ permission, principal, want string }{
		"bad regex":             {`{"url_path":{"path":{"safe_regex":{"regex":"("}}}}`, anyRule, `policies["p"].permissions[0].url_path.path.safe_regex.regex: `},
		"bad header regex":      {`{"and_rules":{"rules":[{"any":true},{"header":{"name":"x","string_match":{"safe_regex":{"regex":"[a"}}}}]}}`, anyRule, `policies["p"].permissions[0].and_rules.rules[1].header.string_match.safe_regex.regex: `},
		"bad CIDR":              {anyRule, `{"source_ip":{"address_prefix":"10.0.0.300","prefix_len":8}}`, `policies["p"].principals[0].source_ip.address_prefix: "10.0.0.300" is not an IP address`},
		"long prefix":           {anyRule, `{"not_id":{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":33}}}`, `policies["p"].principals[0].not_id.remote_ip.prefix_len: 33 is longer than an IPv4 address`},
		"port range reversed":   {`{"destination_port_range":{"start":90,"end":80}}`, anyRule, `policies["p"].permissions[0].destination_port_range: range start 90 cannot be greater or equal than range end 80`},
		"port range bounds":     {`{"destination_port_range":{"start":-1,"end":80}}`, anyRule, `policies["p"].permissions[0].destination_port_range.start: range start -1 is out of bounds`},
		"uri_template":          {`{"uri_template":{"name":"t"}}`, anyRule, `policies["p"].permissions[0].uri_template.typed_config: a typed_config is required`},
		"uri_template syntax":   {fmt.Sprintf(uriTemplate, "/a/**/*"), anyRule, `policies["p"].permissions[0].uri_template.typed_config.path_template: "/a/**/*" is invalid: glob after text glob`},
		"matcher":               {`{"or_rules":{"rules":[{"matcher":{"name":"m"}}]}}`, anyRule, `policies["p"].permissions[0].or_rules.rules[0].matcher.typed_config: required`},
		"sourced_metadata":      {`{"sourced_metadata":{"metadata_matcher":{"filter":"f","value":{"present_match":true}}}}`, anyRule, `policies["p"].permissions[0].sourced_metadata.metadata_matcher.path: at least one segment is required`},
		"filter_state address":  {anyRule, `{"filter_state":{"key":"k","address_match":{"ranges":[{"address_prefix":"x"}]}}}`, `policies["p"].principals[0].filter_state.address_match.ranges[0].address_prefix: "x" is not an IP address`},
		"custom without config": {anyRule, `{"custom":{"name":"c"}}`, `policies["p"].principals[0].custom.typed_config: required`},
		"custom of another type": {anyRule, `{"custom":{"name":"c","typed_config":{"@type":"type.googleapis.com/google.protobuf.Empty"}}}`,
			`policies["p"].principals[0].custom.typed_config: principal extension type.googleapis.com/google.protobuf.Empty is not supported by Outrigger`},
		"mtls without validation": {anyRule, `{"custom":{"name":"m","typed_config":{"@type":"` + mtlsType + `"}}}`,
			`policies["p"].principals[0].custom.typed_config: envoy.rbac.principals.mtls_authenticated did not have any configured validation`},
		"mtls bad SAN matcher": {anyRule, `{"custom":{"name":"m","typed_config":{"@type":"` + mtlsType + `","san_matcher":{"matcher":{"exact":"a"}}}}}`,
			`policies["p"].principals[0].custom.typed_config.san_matcher.san_type: required`},
		"metadata no path": {`{"metadata":{"filter":"f","value":{"present_match":true}}}`, anyRule, `policies["p"].permissions[0].metadata.path: at least one segment is required`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := &rbacv3.RBAC{}
			if err := protojson.Unmarshal([]byte(allowIf(tc.permission, tc.principal)), r); err != nil {
				t.Fatal(err)
			}
			_, err := Compile(r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	for field, js := range map[string]string{
		`policies["p"].condition: empty expression`:              `{"policies":{"p":{"permissions":[{"any":true}],"principals":[{"any":true}],"condition":{"id":"1"}}}}`,
		`audit_logging_options: not implemented by Envoy either`: `{"audit_logging_options":{}}`,
	} {
		r := &rbacv3.RBAC{}
		if err := protojson.Unmarshal([]byte(js), r); err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(r); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want one containing %q", js, err, field)
		}
	}
}

func TestNeeds(t *testing.T) {
	tests := map[string]struct {
		principal string
		want      Needs
	}{
		"head only":    {`{"header":{"name":"x","present_match":true}}`, 0},
		"addresses":    {`{"not_id":{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}}`, NeedAddresses},
		"tls":          {`{"or_ids":{"ids":[{"authenticated":{}}]}}`, NeedTLS},
		"filter state": {`{"filter_state":{"key":"k","string_match":{"exact":"v"}}}`, NeedFilterState},
	}
	for name, tc := range tests {
		if got := compileJSON(t, allowIf(anyRule, tc.principal)).Needs(); got != tc.want {
			t.Errorf("%s: needs %b, want %b", name, got, tc.want)
		}
	}
}

func TestStatsNames(t *testing.T) {
	store := stats.NewStore()
	s := NewStats(store, "http.ingress.", "", "dry")
	s.Record(Decision{Allowed: true})
	s.RecordShadow(Decision{})
	n := NewStats(store, "tcp_in", "enforced.", "")
	n.Record(Decision{})
	n.RecordShadow(Decision{Allowed: true})
	for name, want := range map[string]uint64{
		"http.ingress.rbac.allowed":            1,
		"http.ingress.rbac.denied":             0,
		"http.ingress.rbac.dry.shadow_denied":  1,
		"http.ingress.rbac.dry.shadow_allowed": 0,
		"tcp_in.rbac.enforced.denied":          1,
		"tcp_in.rbac.shadow_allowed":           1,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestEvaluateAllocatesNothing(t *testing.T) {
	e := compileJSON(t, allowIf(`{"and_rules":{"rules":[{"header":{"name":":method","string_match":{"exact":"GET"}}},{"url_path":{"path":{"prefix":"/api"}}},{"destination_port_range":{"start":1,"end":65536}}]}}`,
		`{"or_ids":{"ids":[{"authenticated":{"principal_name":{"exact":"CN=b,O=acme"}}},{"remote_ip":{"address_prefix":"10.0.0.0","prefix_len":8}}]}}`))
	in := withPeer(request(), "spiffe://x", "b.example", "b")
	if n := testing.AllocsPerRun(100, func() {
		if !e.Evaluate(in).Allowed {
			t.Fatal("not allowed")
		}
	}); n != 0 {
		t.Errorf("Evaluate allocates %v times", n)
	}
}

func TestPathPrefixGate(t *testing.T) {
	tests := map[string]struct{ permission, want string }{
		"prefix":                {`{"url_path":{"path":{"prefix":"/api/"}}}`, "/api/"},
		"exact":                 {`{"url_path":{"path":{"exact":"/api/v1"}}}`, "/api/v1"},
		"ignore case":           {`{"url_path":{"path":{"prefix":"/API","ignore_case":true}}}`, ""},
		"suffix":                {`{"url_path":{"path":{"suffix":".js"}}}`, ""},
		"and takes the longest": {`{"and_rules":{"rules":[{"url_path":{"path":{"prefix":"/a"}}},{"url_path":{"path":{"prefix":"/a/b"}}}]}}`, "/a/b"},
		"or takes the common":   {`{"or_rules":{"rules":[{"url_path":{"path":{"prefix":"/api/v1"}}},{"url_path":{"path":{"prefix":"/api/v2"}}}]}}`, "/api/v"},
		"or with an open rule":  {`{"or_rules":{"rules":[{"url_path":{"path":{"prefix":"/api"}}},{"destination_port":80}]}}`, ""},
		"not":                   {`{"not_rule":{"url_path":{"path":{"prefix":"/api"}}}}`, ""},
		"header":                {`{"header":{"name":":path","string_match":{"prefix":"/api"}}}`, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := compileJSON(t, allowIf(tc.permission, anyRule))
			if got := e.policies[0].pathPrefix; got != tc.want {
				t.Errorf("path prefix %q, want %q", got, tc.want)
			}
		})
	}
	// Two policies listed as one permission each: a request the second
	// matches is not ruled out by the first's prefix.
	e := compileJSON(t, `{"action":"ALLOW","policies":{
		"a":{"permissions":[{"url_path":{"path":{"prefix":"/admin"}}}],"principals":[{"any":true}]},
		"b":{"permissions":[{"url_path":{"path":{"prefix":"/api"}}},{"destination_port":1}],"principals":[{"any":true}]}}}`)
	in := request()
	in.Local = netip.MustParseAddrPort("127.0.0.1:1")
	in.Request.Path = "/other"
	if d := e.Evaluate(in); !d.Matched || d.Policy != "b" {
		t.Errorf("matched %v %q, want policy b by its port", d.Matched, d.Policy)
	}
}
