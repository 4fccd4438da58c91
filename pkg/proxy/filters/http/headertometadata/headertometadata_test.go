package headertometadata

import (
	"encoding/base64"
	"strings"
	"testing"

	h2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_to_metadata/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

func parse(t *testing.T, y string) *h2mv3.Config {
	t.Helper()
	var c h2mv3.Config
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestRequestRules(t *testing.T) {
	pv, err := proto.Marshal(structpb.NewBoolValue(true))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Factory{}.Compile(parse(t, `
request_rules:
- header: x-version
  on_header_present: {metadata_namespace: lb, key: version}
  on_header_missing: {metadata_namespace: lb, key: version, value: none}
  remove: true
- header: x-count
  on_header_present: {key: count, type: NUMBER}
- header: x-bad-count
  on_header_present: {key: bad, type: NUMBER}
- header: x-b64
  on_header_present: {key: decoded, encode: BASE64}
- header: x-pv
  on_header_present: {key: pv, type: PROTOBUF_VALUE, encode: BASE64}
- header: x-path
  on_header_present: {key: first, regex_value_rewrite: {pattern: {regex: "^/([^/]+)/.*$"}, substitution: "\\1"}}
- header: x-fixed
  on_header_present: {key: fixed, value: constant}
- header: x-absent
  on_header_missing: {key: absent, value: "yes"}
`), httpfilter.Context{Name: "h2m"})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/", "x-version", "v2", "x-count", "42", "x-bad-count", "many",
		"x-b64", base64.StdEncoding.EncodeToString([]byte("hello")), "x-pv", base64.StdEncoding.EncodeToString(pv),
		"x-path", "/shop/items", "x-fixed", "whatever")
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	md := s.Metadata.GetFilterMetadata()
	if got := md["lb"].AsMap(); got["version"] != "v2" {
		t.Errorf("lb = %v", got)
	}
	if _, ok := s.RequestHeaders().Get("x-version"); ok {
		t.Error("x-version not removed")
	}
	got := md[defaultNamespace].AsMap()
	want := map[string]any{"count": 42.0, "decoded": "hello", "pv": true, "first": "shop", "fixed": "constant", "absent": "yes"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if _, ok := got["bad"]; ok {
		t.Error("a non-number was put in metadata as a NUMBER")
	}

	s = httpfiltertest.NewStream("GET", "/")
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if got := s.Metadata.GetFilterMetadata()["lb"].AsMap(); got["version"] != "none" {
		t.Errorf("missing: lb = %v", got)
	}
}

func TestPerRouteReplaces(t *testing.T) {
	cfg, err := Factory{}.Compile(parse(t, `request_rules: [{header: a, on_header_present: {key: a}}]`), httpfilter.Context{Name: "h2m"})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Factory{}.CompileRoute(parse(t, `response_rules: [{header: b, on_header_present: {key: b}}]`), httpfilter.Context{Name: "h2m"})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/", "a", "1")
	s.RespHeaders = httpfiltertest.NewHeaders("b", "2")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"h2m": {rc}}
	f := cfg.NewFilter()
	f.(httpfilter.Decoder).DecodeHeaders(s)
	f.(httpfilter.Encoder).EncodeHeaders(s)
	got := s.Metadata.GetFilterMetadata()[defaultNamespace].AsMap()
	if _, ok := got["a"]; ok || got["b"] != "2" {
		t.Errorf("metadata = %v, want only the route's response rule", got)
	}
}

// TestCookieRules: a cookie's value as Envoy's
// parseCookieValue finds it; an absent or empty cookie is missing.
func TestCookieRules(t *testing.T) {
	cfg, err := Factory{}.Compile(parse(t, `
request_rules:
- cookie: session
  on_header_present: {key: session}
- cookie: tier
  on_header_present: {key: tier}
  on_header_missing: {key: tier, value: free}
- cookie: empty
  on_header_missing: {key: empty, value: missing}
`), httpfilter.Context{Name: "h2m"})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/", "cookie", "a=1; session=\"abc\"; empty=")
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	got := s.Metadata.GetFilterMetadata()[defaultNamespace].AsMap()
	want := map[string]any{"session": "abc", "tier": "free", "empty": "missing"}
	if len(got) != len(want) {
		t.Fatalf("metadata = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if v, ok := s.RequestHeaders().Get("cookie"); !ok || v == "" {
		t.Error("the cookie header was removed")
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`request_rules: [{cookie: c, header: h, on_header_present: {key: a}}]`, "request_rules[0]: Cannot specify both header and cookie"},
		{`request_rules: [{cookie: c, remove: true, on_header_present: {key: a}}]`, "request_rules[0].remove: Cannot specify remove for cookie"},
		{`response_rules: [{cookie: c, on_header_present: {key: a}}]`, "response_rules[0].cookie: not supported by Outrigger on response rules"},
		{`request_rules: [{on_header_present: {key: a}}]`, "request_rules[0].header: "},
		{`request_rules: [{header: a}]`, "request_rules[0]: one of"},
		{`response_rules: [{header: a, on_header_missing: {key: a}}]`, "response_rules[0].on_header_missing.value: "},
		{`request_rules: [{header: a, on_header_present: {key: a, value: v, regex_value_rewrite: {pattern: {regex: x}, substitution: z}}}]`, "request_rules[0].on_header_present.regex_value_rewrite: cannot"},
		{`request_rules: [{header: a, on_header_present: {key: a, regex_value_rewrite: {pattern: {regex: "("}, substitution: z}}}]`, "request_rules[0].on_header_present.regex_value_rewrite.pattern.regex: "},
		{`request_rules: [{header: a, on_header_present: {}}]`, "request_rules[0].on_header_present.key: "},
		{`{stat_prefix: x, request_rules: [{header: a, on_header_present: {key: a}}]}`, "stat_prefix: no stat store"},
		{`{}`, "request_rules: at least one"},
	} {
		_, err := Factory{}.Compile(parse(t, tc.config), httpfilter.Context{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.config, err, tc.want)
		}
	}
}
