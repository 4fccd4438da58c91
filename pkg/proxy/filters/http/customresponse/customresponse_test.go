package customresponse

import (
	"strconv"
	"testing"

	crv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// config is a CustomResponse whose matcher answers body (with status,
// when not 0) for responses of the status class.
func config(t *testing.T, class, body string, status int) *crv3.CustomResponse {
	t.Helper()
	code := ""
	if status != 0 {
		code = `, "status_code": ` + itoa(status)
	}
	js := `{"custom_response_matcher": {"matcher_list": {"matchers": [{
	  "predicate": {"single_predicate": {"input": {"name": "c", "typed_config": {"@type": "type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeClassMatchInput"}}, "value_match": {"exact": "` + class + `"}}},
	  "on_match": {"action": {"name": "l", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy",
	    "body": {"inline_string": "` + body + `"}` + code + `, "response_headers_to_add": [{"header": {"key": "x-policy", "value": "` + body + `"}}]}}}}]}}}`
	var c crv3.CustomResponse
	if err := protojson.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestEncodeHeaders(t *testing.T) {
	c, err := Factory{}.Compile(config(t, "5xx", "filter", 0), httpfilter.Context{Name: "cr"})
	if err != nil {
		t.Fatal(err)
	}
	vhost, err := Factory{}.CompileRoute(config(t, "5xx", "vhost", 0), httpfilter.Context{Name: "cr"})
	if err != nil {
		t.Fatal(err)
	}
	route, err := Factory{}.CompileRoute(config(t, "4xx", "route", 418), httpfilter.Context{Name: "cr"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		status   int
		perRoute []httpfilter.RouteConfig
		want     string
		code     int
	}{
		{"filter's", 503, nil, "filter", 503},
		{"less specific level still wins over the filter", 502, []httpfilter.RouteConfig{vhost, route}, "vhost", 502},
		{"most specific level", 404, []httpfilter.RouteConfig{vhost, route}, "route", 418},
		{"nothing matches", 200, []httpfilter.RouteConfig{vhost, route}, "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := httpfiltertest.NewStream("GET", "/")
			s.Status = tc.status
			s.RespHeaders = httpfiltertest.NewHeaders("x-upstream", "1")
			s.PerRoute = map[string][]httpfilter.RouteConfig{"cr": tc.perRoute}
			c.NewFilter().(httpfilter.Encoder).EncodeHeaders(s)
			if tc.want == "" {
				if s.Replaced != nil {
					t.Fatalf("replaced with %+v", s.Replaced)
				}
				return
			}
			if s.Replaced == nil || s.Replaced.Body != tc.want || s.Replaced.Status != tc.code {
				t.Fatalf("replaced with %+v, want %q %d", s.Replaced, tc.want, tc.code)
			}
			if v, _ := s.RespHeaders.Get("x-policy"); v != tc.want {
				t.Errorf("x-policy %q", v)
			}
			if _, ok := s.RespHeaders.Get("x-upstream"); ok {
				t.Errorf("the upstream's headers stayed")
			}
		})
	}
}
