package cors

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fromYAML decodes m from YAML, as users write configurations.
func fromYAML(t *testing.T, y string, m proto.Message) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, m); err != nil {
		t.Fatal(err)
	}
}

// routes compiles the test's route configuration: a virtual host with a
// CORS policy, a route with one of its own (/strict), a route without
// (/), and a direct response (/direct).
func routes(t *testing.T) *router.Table {
	var rc routev3.RouteConfiguration
	fromYAML(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  cors:
    allow_origin_string_match: [{exact: "https://app.example"}, {suffix: ".trusted.example"}]
    allow_methods: GET, PUT
    allow_headers: x-custom
    expose_headers: x-exposed
    max_age: "86400"
    allow_credentials: true
    allow_private_network_access: true
  routes:
  - match: {prefix: /strict}
    route:
      cluster: c
      cors:
        allow_origin_string_match: [{exact: "https://only.example"}]
        allow_methods: "*"
        allow_headers: "*"
        allow_credentials: false
        forward_not_matching_preflights: false
  - match: {prefix: /off}
    route: {cluster: c, cors: {filter_enabled: {default_value: {numerator: 0}}}}
  - match: {prefix: /shadow}
    route: {cluster: c, cors: {filter_enabled: {default_value: {numerator: 0}}, shadow_enabled: {default_value: {numerator: 100}}}}
  - match: {prefix: /direct}
    direct_response: {status: 200}
  - match: {prefix: /}
    route: {cluster: c}
`, &rc)
	table, err := router.Compile(&rc)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// newFilter compiles the filter, named "cors", with its stats in st.
func newFilter(t *testing.T, st *stats.Store) httpfilter.Config {
	t.Helper()
	cfg, err := Factory{}.Compile(&corsv3.Cors{}, httpfilter.Context{Name: "cors", Stats: st, StatPrefix: "http.test."})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestCors(t *testing.T) {
	table := routes(t)
	type want struct {
		status  httpfilter.Status
		reply   int // the local reply's status, 0 for none
		headers map[string]string
		valid   uint64
		invalid uint64
	}
	allowed := map[string]string{
		"access-control-allow-origin": "https://app.example", "access-control-allow-credentials": "true",
		"access-control-expose-headers": "x-exposed",
	}
	tests := map[string]struct {
		method, path string
		headers      []string
		want         want
	}{
		"not a CORS request": {method: "GET", path: "/", want: want{headers: map[string]string{}}},
		"an allowed origin":  {method: "GET", path: "/", headers: []string{"origin", "https://app.example"}, want: want{headers: allowed, valid: 1}},
		"a suffix match": {method: "GET", path: "/", headers: []string{"origin", "https://x.trusted.example"}, want: want{valid: 1, headers: map[string]string{
			"access-control-allow-origin": "https://x.trusted.example", "access-control-allow-credentials": "true", "access-control-expose-headers": "x-exposed"}}},
		"an origin not allowed": {method: "GET", path: "/", headers: []string{"origin", "https://evil.example"}, want: want{headers: map[string]string{}, invalid: 1}},
		"a preflight": {method: "OPTIONS", path: "/", headers: []string{
			"origin", "https://app.example", "access-control-request-method", "PUT", "access-control-request-private-network", "true",
		}, want: want{status: httpfilter.Stop, reply: 200, valid: 1, headers: map[string]string{
			"access-control-allow-origin": "https://app.example", "access-control-allow-credentials": "true",
			"access-control-allow-methods": "GET, PUT", "access-control-allow-headers": "x-custom", "access-control-max-age": "86400",
			"access-control-allow-private-network": "true", "access-control-expose-headers": "x-exposed",
		}}},
		"OPTIONS without a requested method is a simple request": {method: "OPTIONS", path: "/", headers: []string{"origin", "https://app.example"},
			want: want{headers: allowed, valid: 1}},
		"a preflight from an origin not allowed goes on": {method: "OPTIONS", path: "/", headers: []string{
			"origin", "https://evil.example", "access-control-request-method", "PUT"}, want: want{headers: map[string]string{}, invalid: 1}},
		"the route's policy comes first": {method: "OPTIONS", path: "/strict", headers: []string{
			"origin", "https://only.example", "access-control-request-method", "PATCH", "access-control-request-headers", "x-a, x-b",
		}, want: want{status: httpfilter.Stop, reply: 200, valid: 1, headers: map[string]string{
			"access-control-allow-origin": "https://only.example", "access-control-allow-methods": "PATCH",
			"access-control-allow-headers": "x-a, x-b", "access-control-max-age": "86400", "access-control-expose-headers": "x-exposed",
		}}},
		"forward_not_matching_preflights false answers": {method: "OPTIONS", path: "/strict", headers: []string{
			"origin", "https://app.example", "access-control-request-method", "GET"},
			want: want{status: httpfilter.Stop, reply: 200, invalid: 1, headers: map[string]string{
				"access-control-allow-methods": "GET", "access-control-allow-headers": "", "access-control-max-age": "86400",
			}}},
		"filter_enabled at 0%": {method: "GET", path: "/off", headers: []string{"origin", "https://app.example"}, want: want{headers: map[string]string{}}},
		"shadow mode counts only": {method: "OPTIONS", path: "/shadow", headers: []string{"origin", "https://app.example", "access-control-request-method", "GET"},
			want: want{headers: map[string]string{}, valid: 1}},
		"a direct response has no route entry": {method: "GET", path: "/direct", headers: []string{"origin", "https://app.example"}, want: want{headers: map[string]string{}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := stats.NewStore()
			cfg := newFilter(t, st)
			s := httpfiltertest.NewStream(tc.method, tc.path, tc.headers...)
			s.Matched = table.Match("h", tc.path)
			f := cfg.NewFilter()
			got := f.(httpfilter.Decoder).DecodeHeaders(s)
			if got != tc.want.status {
				t.Errorf("DecodeHeaders = %v, want %v", got, tc.want.status)
			}
			switch {
			case tc.want.reply == 0 && s.Reply != nil:
				t.Errorf("reply %+v", s.Reply)
			case tc.want.reply != 0 && (s.Reply == nil || s.Reply.Status != tc.want.reply || s.Reply.Details != "cors_response"):
				t.Errorf("reply %+v, want %d cors_response", s.Reply, tc.want.reply)
			}
			f.(httpfilter.Encoder).EncodeHeaders(s)
			checkHeaders(t, s.RespHeaders, tc.want.headers)
			if v := st.Counter("http.test.cors.origin_valid").Value(); v != tc.want.valid {
				t.Errorf("origin_valid = %d, want %d", v, tc.want.valid)
			}
			if v := st.Counter("http.test.cors.origin_invalid").Value(); v != tc.want.invalid {
				t.Errorf("origin_invalid = %d, want %d", v, tc.want.invalid)
			}
			f.(httpfilter.Destroyer).OnDestroy()
		})
	}
}

// checkHeaders compares the access-control headers of h with want.
func checkHeaders(t *testing.T, h *httpfiltertest.Headers, want map[string]string) {
	t.Helper()
	for _, name := range []string{"access-control-allow-origin", "access-control-allow-credentials", "access-control-allow-methods",
		"access-control-allow-headers", "access-control-max-age", "access-control-expose-headers", "access-control-allow-private-network"} {
		got, ok := h.Get(name)
		w, wantOK := want[name]
		if ok != wantOK || got != w {
			t.Errorf("%s = %q (%v), want %q (%v)", name, got, ok, w, wantOK)
		}
	}
}

// TestPerRoutePolicy checks that per-route CorsPolicy entries replace the
// route's and virtual host's cors, the most specific first.
func TestPerRoutePolicy(t *testing.T) {
	table := routes(t)
	compile := func(y string) httpfilter.RouteConfig {
		var p corsv3.CorsPolicy
		fromYAML(t, y, &p)
		rc, err := Factory{}.CompileRoute(&p, httpfilter.Context{Name: "cors"})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	general := compile(`{allow_origin_string_match: [{prefix: "https://"}], allow_methods: POST, expose_headers: x-general}`)
	specific := compile(`{allow_origin_string_match: [{exact: "https://per.example"}], filter_enabled: {default_value: {numerator: 100}}}`)
	st := stats.NewStore()
	cfg := newFilter(t, st)
	s := httpfiltertest.NewStream("OPTIONS", "/", "origin", "https://other.example", "access-control-request-method", "POST")
	s.Matched = table.Match("h", "/")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"cors": {general, specific}}
	f := cfg.NewFilter()
	if got := f.(httpfilter.Decoder).DecodeHeaders(s); got != httpfilter.Continue {
		t.Errorf("a preflight not allowed by the most specific policy: %v", got)
	}
	s = httpfiltertest.NewStream("OPTIONS", "/", "origin", "https://per.example", "access-control-request-method", "POST")
	s.Matched = table.Match("h", "/")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"cors": {general, specific}}
	f = cfg.NewFilter()
	if got := f.(httpfilter.Decoder).DecodeHeaders(s); got != httpfilter.Stop {
		t.Fatalf("preflight: %v", got)
	}
	f.(httpfilter.Encoder).EncodeHeaders(s)
	// The route's own cors (credentials, max age) is ignored: per-route
	// policies replace it.
	checkHeaders(t, s.RespHeaders, map[string]string{
		"access-control-allow-origin": "https://per.example", "access-control-allow-methods": "POST", "access-control-expose-headers": "x-general",
	})
}

func TestCompileErrors(t *testing.T) {
	if _, err := (Factory{}).Compile(&faultv3.HTTPFault{}, httpfilter.Context{}); err == nil {
		t.Error("another filter's configuration was accepted")
	}
	if _, err := (Factory{}).CompileRoute(&corsv3.Cors{}, httpfilter.Context{}); err == nil {
		t.Error("the filter's configuration was accepted as a per-route one")
	}
	var p corsv3.CorsPolicy
	fromYAML(t, `{allow_origin_string_match: [{exact: a}, {safe_regex: {regex: "["}}]}`, &p)
	_, err := Factory{}.CompileRoute(&p, httpfilter.Context{})
	if err == nil || !strings.Contains(err.Error(), "allow_origin_string_match[1].safe_regex.regex") {
		t.Errorf("error %v", err)
	}
}
