package matchdelegate_test

import (
	"strings"
	"testing"

	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fromYAML decodes a message from YAML.
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

// context is a filter context with the built-in filters.
func context() httpfilter.Context {
	return httpfilter.Context{Name: "wrapped", Stats: stats.NewStore(), StatPrefix: "http.test.", Extensions: builtin.Registry(), LookupByName: true}
}

// compile compiles an ExtensionWithMatcher.
func compile(t *testing.T, y string) (httpfilter.Config, error) {
	t.Helper()
	var c matchingv3.ExtensionWithMatcher
	fromYAML(t, y, &c)
	return matchdelegate.Factory{}.Compile(&c, context())
}

// mutation is a header_mutation that adds x-req to requests and x-resp to
// responses.
const mutation = `
extension_config:
  name: hm
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation
    mutations:
      request_mutations: [{append: {header: {key: x-req, value: "1"}}}]
      response_mutations: [{append: {header: {key: x-resp, value: "1"}}}]
`

// skipOn is a matcher that skips the filter when input reads value.
func skipOn(input, header, value string) string {
	return `
xds_matcher:
  matcher_list:
    matchers:
    - predicate:
        single_predicate:
          input:
            name: in
            typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.` + input + `, header_name: ` + header + `}
          value_match: {exact: "` + value + `"}
      on_match:
        action:
          name: skip
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.common.matcher.action.v3.SkipFilter}
`
}

// run runs one request through the filter: the request headers, then a
// 200 response with the given headers.
func run(cfg httpfilter.Config, req, resp []string) *httpfiltertest.Stream {
	s := httpfiltertest.NewStream("GET", "/", req...)
	f := cfg.NewFilter()
	if d, ok := f.(httpfilter.Decoder); ok {
		d.DecodeHeaders(s)
	}
	s.Status = 200
	s.RespHeaders = httpfiltertest.NewHeaders(resp...)
	if e, ok := f.(httpfilter.Encoder); ok {
		e.EncodeHeaders(s)
	}
	if d, ok := f.(httpfilter.Destroyer); ok {
		d.OnDestroy()
	}
	return s
}

func has(h *httpfiltertest.Headers, name string) bool {
	_, ok := h.Get(name)
	return ok
}

func TestSkipOnRequestHeader(t *testing.T) {
	cfg, err := compile(t, mutation+skipOn("HttpRequestHeaderMatchInput", "x-skip", "yes"))
	if err != nil {
		t.Fatal(err)
	}
	s := run(cfg, []string{"x-skip", "yes"}, nil)
	if has(s.ReqHeaders, "x-req") || has(s.RespHeaders, "x-resp") {
		t.Errorf("skipped filter ran: request %v, response %v", s.ReqHeaders, s.RespHeaders)
	}
	s = run(cfg, []string{"x-skip", "no"}, nil)
	if !has(s.ReqHeaders, "x-req") || !has(s.RespHeaders, "x-resp") {
		t.Errorf("filter did not run without a match: request %v, response %v", s.ReqHeaders, s.RespHeaders)
	}
}

func TestSkipOnResponseHeaderWaitsForTheResponse(t *testing.T) {
	cfg, err := compile(t, mutation+skipOn("HttpResponseHeaderMatchInput", "x-skip", "yes"))
	if err != nil {
		t.Fatal(err)
	}
	// The request side runs: the match needs the response.
	s := run(cfg, nil, []string{"x-skip", "yes"})
	if !has(s.ReqHeaders, "x-req") {
		t.Error("request side skipped before the response was there")
	}
	if has(s.RespHeaders, "x-resp") {
		t.Error("response side ran although the response matched SkipFilter")
	}
	s = run(cfg, nil, []string{"x-skip", "no"})
	if !has(s.ReqHeaders, "x-req") || !has(s.RespHeaders, "x-resp") {
		t.Errorf("filter did not run without a match: request %v, response %v", s.ReqHeaders, s.RespHeaders)
	}
}

func TestPseudoHeaderInput(t *testing.T) {
	cfg, err := compile(t, mutation+skipOn("HttpRequestHeaderMatchInput", `":path"`, "/"))
	if err != nil {
		t.Fatal(err)
	}
	if s := run(cfg, nil, nil); has(s.ReqHeaders, "x-req") {
		t.Error(":path / did not skip the filter")
	}
}

func TestNoMatcherSkips(t *testing.T) {
	cfg, err := compile(t, mutation)
	if err != nil {
		t.Fatal(err)
	}
	if s := run(cfg, nil, nil); has(s.ReqHeaders, "x-req") || has(s.RespHeaders, "x-resp") {
		t.Error("a wrapper without a matcher ran its filter (Envoy skips it)")
	}
}

func TestRouteMatcherReplacesTheFilters(t *testing.T) {
	cfg, err := compile(t, mutation+skipOn("HttpRequestHeaderMatchInput", "x-skip", "yes"))
	if err != nil {
		t.Fatal(err)
	}
	var pr matchingv3.ExtensionWithMatcherPerRoute
	fromYAML(t, skipOn("HttpRequestHeaderMatchInput", "x-route-skip", "yes"), &pr)
	rc, err := matchdelegate.Factory{}.CompileRoute(&pr, context())
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/", "x-skip", "yes")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"wrapped": {rc}}
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if !has(s.ReqHeaders, "x-req") {
		t.Error("the filter's own matcher applied despite the route's")
	}
	s = httpfiltertest.NewStream("GET", "/", "x-route-skip", "yes")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"wrapped": {rc}}
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if has(s.ReqHeaders, "x-req") {
		t.Error("the route's matcher did not skip the filter")
	}
}

func TestConfigErrors(t *testing.T) {
	const action = "xds_matcher.matcher_list.matchers[0].on_match.action.typed_config"
	for _, tc := range []struct{ name, yaml, want string }{
		{"router", `
extension_config: {name: r, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}`,
			"extension_config.typed_config: proxy.filters.http.router is the terminal filter"},
		{"unknown filter", `
extension_config: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}`,
			"extension_config.typed_config: filter type google.protobuf.Empty is not supported"},
		{"bad wrapped config", `
extension_config:
  name: f
  typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, abort: {http_status: 99}}`,
			"extension_config.typed_config.abort"},
		{"deprecated matcher", mutation + `
matcher: {matcher_tree: {input: {name: x}}}`, "matcher: the deprecated"},
		{"composite action on another filter", mutation + `
xds_matcher:
  on_no_match:
    action:
      name: a
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction
        typed_config: {name: b, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer}}`,
			"xds_matcher.on_no_match.action.typed_config: action envoy.extensions.filters.http.composite.v3.ExecuteFilterAction is not supported by Outrigger for this filter (supported: envoy.extensions.filters.common.matcher.action.v3.SkipFilter)"},
		{"unsupported input", mutation + `
xds_matcher:
  matcher_tree:
    input: {name: in, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}
    exact_match_map: {map: {}}`, "xds_matcher.matcher_tree.input.typed_config: input google.protobuf.Empty is not supported"},
		{"skip without type", mutation + `
xds_matcher:
  matcher_list:
    matchers:
    - predicate: {single_predicate: {input: {name: in, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: a}}, value_match: {exact: b}}}
      on_match: {action: {name: skip}}`, action + ": an action is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRouteMatcherTakesRequestHeadersOnly(t *testing.T) {
	var pr matchingv3.ExtensionWithMatcherPerRoute
	fromYAML(t, skipOn("HttpResponseHeaderMatchInput", "x", "y"), &pr)
	_, err := matchdelegate.Factory{}.CompileRoute(&pr, context())
	want := "xds_matcher.matcher_list.matchers[0].predicate.single_predicate.input.typed_config: data input typeUrl type.googleapis.com/envoy.type.matcher.v3.HttpResponseHeaderMatchInput not permitted according to allowlist"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
