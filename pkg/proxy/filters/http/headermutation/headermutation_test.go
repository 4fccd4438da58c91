package headermutation

import (
	"net/http"
	"strings"
	"testing"

	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/formatter/reqwithoutquery"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
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

func compile(t *testing.T, y string) *filterConfig {
	t.Helper()
	var c hmv3.HeaderMutation
	fromYAML(t, y, &c)
	cfg, err := Factory{}.Compile(&c, httpfilter.Context{Name: "hm"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.(*filterConfig)
}

func perRoute(t *testing.T, y string) httpfilter.RouteConfig {
	t.Helper()
	var c hmv3.HeaderMutationPerRoute
	fromYAML(t, y, &c)
	rc, err := Factory{}.CompileRoute(&c, httpfilter.Context{Name: "hm"})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestMutationsInOrder(t *testing.T) {
	c := compile(t, `
mutations:
  request_mutations:
  - remove: x-secret
  - append: {header: {key: x-added, value: one}, append_action: APPEND_IF_EXISTS_OR_ADD}
  - append: {header: {key: x-added, value: two}, append_action: APPEND_IF_EXISTS_OR_ADD}
  - append: {header: {key: x-over, value: new}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
  - remove: x-added
  - append: {header: {key: x-final, value: "yes"}}
  response_mutations:
  - append: {header: {key: x-resp, value: r}, append_action: ADD_IF_ABSENT}
  - remove: server
`)
	s := httpfiltertest.NewStream("GET", "/", "x-secret", "s", "x-over", "old", "x-added", "zero")
	s.RespHeaders = httpfiltertest.NewHeaders("server", "up", "x-resp", "kept")
	f := c.NewFilter()
	f.(httpfilter.Decoder).DecodeHeaders(s)
	f.(httpfilter.Encoder).EncodeHeaders(s)
	req := s.RequestHeaders()
	if _, ok := req.Get("x-secret"); ok {
		t.Error("x-secret not removed")
	}
	if _, ok := req.Get("x-added"); ok {
		t.Error("x-added: the later remove did not apply after the appends")
	}
	if v, _ := req.Get("x-over"); v != "new" {
		t.Errorf("x-over = %q", v)
	}
	if v, _ := req.Get("x-final"); v != "yes" {
		t.Errorf("x-final = %q", v)
	}
	resp := s.ResponseHeaders()
	if _, ok := resp.Get("server"); ok {
		t.Error("server not removed")
	}
	if v, _ := resp.Get("x-resp"); v != "kept" {
		t.Errorf("x-resp = %q, ADD_IF_ABSENT replaced it", v)
	}
}

func TestPerRouteOrder(t *testing.T) {
	const vh = `mutations: {request_mutations: [{append: {header: {key: x-level, value: vhost}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}}]}`
	const route = `mutations: {request_mutations: [{append: {header: {key: x-level, value: route}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}}]}`
	for _, tc := range []struct {
		name, config, want string
	}{
		// Envoy's default: most specific first, so the least specific
		// one overwrites it.
		{"default", `mutations: {request_mutations: [{append: {header: {key: x-level, value: filter}}}]}`, "vhost"},
		{"most specific wins", `{most_specific_header_mutations_wins: true, mutations: {request_mutations: [{append: {header: {key: x-level, value: filter}}}]}}`, "route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compile(t, tc.config)
			s := httpfiltertest.NewStream("GET", "/")
			s.PerRoute = map[string][]httpfilter.RouteConfig{"hm": {perRoute(t, vh), perRoute(t, route)}}
			c.DecodeHeaders(s)
			if v, _ := s.RequestHeaders().Get("x-level"); v != tc.want {
				t.Errorf("x-level = %q, want %q", v, tc.want)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct{ config, want string }{

		{`mutations: {response_trailers_mutations: [{remove: ":status"}]}`, "mutations.response_trailers_mutations[0].remove: "},
		{`mutations: {request_trailers_mutations: [{append: {header: {key: x, value: "%NOPE%"}}}]}`, "mutations.request_trailers_mutations[0].append.header.value: "},
		{`mutations: {request_mutations: [{remove: a}, {remove_on_match: {key_matcher: {safe_regex: {regex: "("}}}}]}`, "mutations.request_mutations[1].remove_on_match.key_matcher.safe_regex"},
		{`mutations: {request_mutations: [{append: {header: {key: x, value: "%NOT_AN_OPERATOR%"}}}]}`, "mutations.request_mutations[0].append.header.value: "},
		{`mutations: {response_mutations: [{remove: ":status"}]}`, "mutations.response_mutations[0].remove: "},
		{`mutations: {response_mutations: [{append: {header: {key: ":path", value: a}}}]}`, "mutations.response_mutations[0].append.header.key: "},
	} {
		var c hmv3.HeaderMutation
		fromYAML(t, tc.config, &c)
		_, err := Factory{}.Compile(&c, httpfilter.Context{Name: "hm"})
		if tc.want == "" {
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.config, err, tc.want)
		}
	}
}

func TestRemoveOnMatch(t *testing.T) {
	c := compile(t, `
mutations:
  request_mutations:
  - append: {header: {key: x-debug-added, value: "1"}}
  - remove_on_match: {key_matcher: {prefix: x-debug-}}
  - append: {header: {key: x-debug-after, value: "2"}}
  response_mutations:
  - remove_on_match: {key_matcher: {safe_regex: {regex: "^x-(internal|trace)-.*"}}}
`)
	s := httpfiltertest.NewStream("GET", "/", "x-debug-a", "a", "x-keep", "k", "x-debug-b", "b")
	s.RespHeaders = httpfiltertest.NewHeaders("x-internal-id", "7", "x-trace-span", "9", "x-internalish", "stays", "server", "up")
	c.DecodeHeaders(s)
	c.EncodeHeaders(s)
	var req []string
	s.ReqHeaders.Range(func(n, v string) bool { req = append(req, n+"="+v); return true })
	if got := strings.Join(req, ","); got != "x-keep=k,x-debug-after=2" {
		t.Errorf("request headers %s; want the x-debug- ones removed in order, the one appended after kept", got)
	}
	var resp []string
	s.RespHeaders.Range(func(n, v string) bool { resp = append(resp, n+"="+v); return true })
	if got := strings.Join(resp, ","); got != "x-internalish=stays,server=up" {
		t.Errorf("response headers %s", got)
	}
}

func TestOperatorValues(t *testing.T) {
	c := compile(t, `
mutations:
  request_mutations:
  - append: {header: {key: x-copied, value: "from-%REQ(x-source)%"}}
  - append: {header: {key: x-client, value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}}
  - append: {header: {key: x-method, value: "%REQ(:METHOD)% %REQ(:PATH)%"}}
  response_mutations:
  - append: {header: {key: x-echo, value: "%REQ(x-source)%/%RESP(x-up)%"}}
`)
	s := httpfiltertest.NewStream("POST", "/p?q=1", "x-source", "abc")
	s.StreamInfo.RemoteAddress = "192.0.2.7:5555"
	s.RespHeaders = httpfiltertest.NewHeaders("x-up", "upv")
	c.DecodeHeaders(s)
	c.EncodeHeaders(s)
	for name, want := range map[string]string{"x-copied": "from-abc", "x-client": "192.0.2.7", "x-method": "POST /p?q=1"} {
		if v, _ := s.RequestHeaders().Get(name); v != want {
			t.Errorf("request %s = %q, want %q", name, v, want)
		}
	}
	if v, _ := s.ResponseHeaders().Get("x-echo"); v != "abc/upv" {
		t.Errorf("response x-echo = %q, want abc/upv", v)
	}
}

// TestFormatters checks a Mutations' formatters: their operators work in
// that message's values (headers and query parameters), and are refused,
// with the extension to list, where it does not list them.
func TestFormatters(t *testing.T) {
	reg, err := extension.New(extension.Of(reqwithoutquery.Name, accesslog.FormatterCategory, &rwqv3.ReqWithoutQuery{}, reqwithoutquery.Factory{}))
	if err != nil {
		t.Fatal(err)
	}
	const mutations = `
mutations:
  formatters:
  - name: envoy.formatter.req_without_query
    typed_config: {"@type": type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery}
  request_mutations:
  - append: {header: {key: x-path, value: "%REQ_WITHOUT_QUERY(:PATH)%"}}
  query_parameter_mutations:
  - append: {record: {key: from, value: "%REQ_WITHOUT_QUERY(x-origin)%"}}
`
	var c hmv3.HeaderMutation
	fromYAML(t, mutations, &c)
	cfg, err := Factory{}.Compile(&c, httpfilter.Context{Name: "hm", Extensions: reg})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/items/7?secret=1", "x-origin", "/a?b")
	cfg.(*filterConfig).DecodeHeaders(s)
	if v, _ := s.RequestHeaders().Get("x-path"); v != "/items/7" {
		t.Errorf("x-path = %q, want /items/7", v)
	}
	if p := s.Request().Path; !strings.Contains(p, "from=%2Fa") {
		t.Errorf("path %q, want the query parameter from=/a (encoded)", p)
	}

	// Per route too, and only where listed.
	var pr hmv3.HeaderMutationPerRoute
	fromYAML(t, mutations, &pr)
	if _, err := (Factory{}).CompileRoute(&pr, httpfilter.Context{Name: "hm", Extensions: reg}); err != nil {
		t.Fatalf("per route: %v", err)
	}
	var bare hmv3.HeaderMutation
	fromYAML(t, `
mutations:
  request_mutations:
  - append: {header: {key: x-path, value: "%REQ_WITHOUT_QUERY(:PATH)%"}}
`, &bare)
	_, err = Factory{}.Compile(&bare, httpfilter.Context{Name: "hm", Extensions: reg})
	if err == nil || !strings.Contains(err.Error(), "envoy.formatter.req_without_query") {
		t.Fatalf("an operator of an unlisted formatter: %v", err)
	}
}

func TestQueryParameterMutations(t *testing.T) {
	c := compile(t, `
mutations:
  query_parameter_mutations:
  - remove: drop
  - append: {record: {key: tag, value: "%REQ(x-tag)%"}, action: APPEND_IF_EXISTS_OR_ADD}
  - append: {record: {key: only, value: "new"}, action: ADD_IF_ABSENT}
  - append: {record: {key: kept, value: "new"}, action: ADD_IF_ABSENT}
  - append: {record: {key: over, value: "a b&c"}, action: OVERWRITE_IF_EXISTS_OR_ADD}
  - append: {record: {key: absent, value: "x"}, action: OVERWRITE_IF_EXISTS}
`)
	for _, tc := range []struct{ path, want string }{
		// Sorted by name, each name's values in order; untouched
		// parameters keep their bytes; added values are encoded.
		{"/p?zed=1&drop=x&tag=first&kept=%41&over=1&over=2&drop=y", "/p?kept=%41&only=new&over=a%20b%26c&tag=first&tag=t%2F1&zed=1"},
		{"/p", "/p?kept=new&only=new&over=a%20b%26c&tag=t%2F1"},
		{"/p?drop=1", "/p?kept=new&only=new&over=a%20b%26c&tag=t%2F1"},
	} {
		s := httpfiltertest.NewStream("GET", tc.path, "x-tag", "t/1")
		c.DecodeHeaders(s)
		if got := s.Request().Path; got != tc.want {
			t.Errorf("%s became %s, want %s", tc.path, got, tc.want)
		}
	}
	// Everything removed: the path loses its "?".
	c = compile(t, `mutations: {query_parameter_mutations: [{remove: a}, {remove: "b c"}]}`)
	s := httpfiltertest.NewStream("GET", "/x?a=1&b%20c=2")
	c.DecodeHeaders(s)
	if got := s.Request().Path; got != "/x" {
		t.Errorf("path %s, want /x", got)
	}
}

func TestQueryParameterMutationsRefused(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`mutations: {query_parameter_mutations: [{}]}`, "mutations.query_parameter_mutations[0]: one of 'append'/'remove' must be specified"},
		{`mutations: {query_parameter_mutations: [{append: {action: ADD_IF_ABSENT}}]}`, "mutations.query_parameter_mutations[0].append: no record"},
		{`mutations: {query_parameter_mutations: [{append: {record: {key: k, value: 3}}}]}`, "mutations.query_parameter_mutations[0].append.record.value: only string value"},
		{`mutations: {query_parameter_mutations: [{remove: x, append: {record: {key: k, value: v}}}]}`, "mutations.query_parameter_mutations[0]: only one of"},
		{`mutations: {query_parameter_mutations: [{append: {record: {key: k, value: "%BOGUS%"}}}]}`, "mutations.query_parameter_mutations[0].append.record.value: "},
	} {
		var c hmv3.HeaderMutation
		fromYAML(t, tc.config, &c)
		_, err := Factory{}.Compile(&c, httpfilter.Context{Name: "hm"})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.config, err, tc.want)
		}
	}
}

func TestTrailerMutations(t *testing.T) {
	c := compile(t, `
mutations:
  request_trailers_mutations:
  - remove: x-drop
  - append: {header: {key: x-req-trailer, value: "from-%REQ(x-src)%"}}
  response_trailers_mutations:
  - append: {header: {key: grpc-message, value: replaced}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
  - remove_on_match: {key_matcher: {prefix: x-internal-}}
`)
	s := httpfiltertest.NewStream("POST", "/", "x-src", "s1")
	c.DecodeHeaders(s)
	c.EncodeHeaders(s)
	if len(s.Decoders) != 1 || len(s.Encoders) != 1 {
		t.Fatalf("%d decoders, %d encoders; want one of each", len(s.Decoders), len(s.Encoders))
	}
	dec, enc := s.Decoders[0], s.Encoders[0]
	if k, ok := dec.(httpfilter.RequestLengthKeeper); !ok || !k.KeepsRequestLength() {
		t.Error("the request decoder changes the body's length")
	}
	if k, ok := enc.(httpfilter.LengthKeeper); !ok || !k.KeepsLength() {
		t.Error("the response encoder changes the body's length")
	}
	if out, _ := dec.DecodeData([]byte("body")); string(out) != "body" {
		t.Errorf("body became %q", out)
	}
	got := dec.(httpfilter.TrailerDecoder).DecodeTrailers(http.Header{"X-Drop": {"1"}, "X-Keep": {"2"}})
	if got.Get("X-Drop") != "" || got.Get("X-Keep") != "2" || got.Get("X-Req-Trailer") != "from-s1" {
		t.Errorf("request trailers %v", got)
	}
	// A message without trailers gets none, as in Envoy.
	if got := dec.(httpfilter.TrailerDecoder).DecodeTrailers(nil); got != nil {
		t.Errorf("trailers %v added to a request that had none", got)
	}
	_, rt, err := enc.EncodeEnd(http.Header{"Grpc-Status": {"0"}, "Grpc-Message": {"orig"}, "X-Internal-Id": {"9"}})
	if err != nil || rt.Get("Grpc-Message") != "replaced" || rt.Get("X-Internal-Id") != "" || rt.Get("Grpc-Status") != "0" {
		t.Errorf("response trailers %v (%v)", rt, err)
	}
	// Without trailer mutations, no transformer at all.
	plain := compile(t, `mutations: {request_mutations: [{remove: a}]}`)
	s = httpfiltertest.NewStream("POST", "/")
	plain.DecodeHeaders(s)
	plain.EncodeHeaders(s)
	if len(s.Decoders)+len(s.Encoders) != 0 {
		t.Error("a filter without trailer mutations transforms the body")
	}
}
