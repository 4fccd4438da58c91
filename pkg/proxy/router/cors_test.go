package router

import (
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

func TestCorsPolicy(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- domains: ["*"]
  cors:
    allow_origin_string_match: [{exact: "https://a.example"}, {suffix: ".b.example", ignore_case: true}]
    allow_methods: GET, POST
    allow_headers: x-a
    expose_headers: x-b
    max_age: "600"
    allow_credentials: true
    filter_enabled: {default_value: {numerator: 50}, runtime_key: cors.on}
    shadow_enabled: {default_value: {numerator: 10, denominator: TEN_THOUSAND}}
    allow_private_network_access: false
    forward_not_matching_preflights: false
  routes:
  - match: {prefix: /}
    route: {cluster: c, cors: {allow_methods: PUT}}
`)
	r := table.Match("h", "/")
	vh := r.VirtualHost.Cors
	if vh == nil || r.Cors == nil || r.Cors.AllowMethods != "PUT" {
		t.Fatalf("cors %+v %+v", vh, r.Cors)
	}
	if vh.AllowMethods != "GET, POST" || vh.AllowHeaders != "x-a" || vh.ExposeHeaders != "x-b" || vh.MaxAge != "600" {
		t.Errorf("strings %+v", vh)
	}
	if *vh.AllowCredentials != true || *vh.AllowPrivateNetworkAccess != false || *vh.ForwardNotMatchingPreflights != false || r.Cors.AllowCredentials != nil {
		t.Errorf("booleans %+v", vh)
	}
	if *vh.FilterEnabled != (runtime.Fraction{Key: "cors.on", Numerator: 50, Denominator: 100}) ||
		*vh.ShadowEnabled != (runtime.Fraction{Numerator: 10, Denominator: 10000}) || r.Cors.FilterEnabled != nil {
		t.Errorf("fractions %+v %+v", vh.FilterEnabled, vh.ShadowEnabled)
	}
	for origin, want := range map[string]bool{"https://a.example": true, "https://x.B.example": true, "https://c.example": false} {
		got := false
		for i := range vh.AllowOrigins {
			got = got || vh.AllowOrigins[i].Match(origin)
		}
		if got != want {
			t.Errorf("origin %q allowed = %v", origin, got)
		}
	}
	_, err := Compile(parseRC(t, `
virtual_hosts:
- domains: ["*"]
  cors: {allow_origin_string_match: [{safe_regex: {regex: "("}}]}
`))
	if err == nil || !strings.Contains(err.Error(), "virtual_hosts[0].cors.allow_origin_string_match[0].safe_regex.regex") {
		t.Errorf("error %v", err)
	}
}
