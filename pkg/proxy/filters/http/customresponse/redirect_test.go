package customresponse

import (
	"strings"
	"testing"

	crv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// redirectConfig is a CustomResponse whose on_no_match is a
// RedirectPolicy with fields (JSON).
func redirectConfig(t *testing.T, fields string) *crv3.CustomResponse {
	t.Helper()
	js := `{"custom_response_matcher": {"on_no_match": {"action": {"name": "r", "typed_config": {
	  "@type": "type.googleapis.com/envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy", ` + fields + `}}}}}`
	var c crv3.CustomResponse
	if err := protojson.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestRedirectPolicyRefusals(t *testing.T) {
	for fields, want := range map[string]string{
		`"uri": "ftp://a/b"`:                                                `typed_config.uri: "ftp://a/b" is not an absolute http or https URL`,
		`"uri": "http:///nohost"`:                                           `is not an absolute http or https URL`,
		`"redirect_action": {"regex_rewrite": {}}`:                          "typed_config.redirect_action.regex_rewrite: not supported for a custom response",
		`"redirect_action": {"path_rewrite": "/x"}`:                         "typed_config.redirect_action.path_rewrite: not supported by Outrigger",
		`"redirect_action": {"https_redirect": true}`:                       "at least one of host_redirect and path_redirect is required",
		`"redirect_action": {"host_redirect": "h", "port_redirect": 70000}`: "typed_config.redirect_action.port_redirect: 70000 is not a port",
		`"uri": "http://a/", "status_code": 99`:                             "typed_config.status_code: 99 is not between 100 and 999",
	} {
		_, err := Factory{}.Compile(redirectConfig(t, fields), httpfilter.Context{Name: "cr"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", fields, err, want)
		}
	}
	valid := redirectConfig(t, `"redirect_action": {"host_redirect": "errors", "port_redirect": 8080, "strip_query": true}`)
	if _, err := (Factory{}).Compile(valid, httpfilter.Context{Name: "cr"}); err != nil {
		t.Errorf("a valid redirect_action: %v", err)
	}
}

// TestRedirectedPass: on the pass a policy recreated, the filter's
// matchers are not consulted; a 2xx response gets the policy's headers
// and status, an error response is left alone.
func TestRedirectedPass(t *testing.T) {
	c, err := Factory{}.Compile(redirectConfig(t, `"uri": "http://errors/page", "status_code": 299,
	  "response_headers_to_add": [{"header": {"key": "x-custom", "value": "cr"}}]`), httpfilter.Context{Name: "cr"})
	if err != nil {
		t.Fatal(err)
	}
	p := c.(*filterConfig).matcher
	pol, ok := p.Match(matchData{s: httpfiltertest.NewStream("GET", "/")})
	if !ok || pol.redirect == nil {
		t.Fatal("on_no_match is not the redirect policy")
	}
	for _, tc := range []struct {
		status, want int
		header       string
	}{{200, 299, "cr"}, {204, 299, "cr"}, {500, 500, ""}, {302, 302, ""}} {
		s := httpfiltertest.NewStream("GET", "/page")
		s.Status = tc.status
		s.RespHeaders = httpfiltertest.NewHeaders("x-page", "1")
		s.SetFilterState(stateKey, redirected{pol.redirect})
		c.NewFilter().(httpfilter.Encoder).EncodeHeaders(s)
		if s.Status != tc.want || s.Replaced != nil {
			t.Errorf("%d: status %d (replaced %+v), want %d", tc.status, s.Status, s.Replaced, tc.want)
		}
		if v, _ := s.RespHeaders.Get("x-custom"); v != tc.header {
			t.Errorf("%d: x-custom %q, want %q", tc.status, v, tc.header)
		}
		if v, _ := s.RespHeaders.Get("x-page"); v != "1" {
			t.Errorf("%d: the response's own header went", tc.status)
		}
	}
}
