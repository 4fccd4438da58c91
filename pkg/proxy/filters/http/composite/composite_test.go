package composite_test

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/composite"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

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

// runtimeValues is a fixed runtime.
type runtimeValues map[string]uint64

func (r runtimeValues) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

// compile compiles a composite filter wrapped in an ExtensionWithMatcher
// whose matcher delegates, when x-mutate reads "yes", to the action's
// extra fields and a header_mutation adding x-mutated.
func compile(t *testing.T, store *stats.Store, rt runtimeValues, action string) (httpfilter.Config, error) {
	t.Helper()
	var c matchingv3.ExtensionWithMatcher
	fromYAML(t, `
extension_config:
  name: composite
  typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.Composite}
xds_matcher:
  matcher_tree:
    input:
      name: in
      typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-mutate}
    exact_match_map:
      map:
        "yes":
          action:
            name: delegate
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction
`+action, &c)
	ctx := httpfilter.Context{Name: "composite", Stats: store, StatPrefix: "http.test.", Extensions: builtin.Registry(), LookupByName: true, Runtime: rt}
	return matchdelegate.Factory{}.Compile(&c, ctx)
}

const mutate = `
              typed_config:
                name: hm
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation
                  mutations:
                    request_mutations: [{append: {header: {key: x-mutated, value: "1"}}}]
`

// decode runs the request headers through a new filter of cfg.
func decode(cfg httpfilter.Config, headers ...string) *httpfiltertest.Stream {
	s := httpfiltertest.NewStream("GET", "/", headers...)
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	return s
}

func counter(store *stats.Store, name string) uint64 {
	return store.Scope("http.test.composite.").Counter(name).Value()
}

func TestDelegatesOnMatch(t *testing.T) {
	store := stats.NewStore()
	cfg, err := compile(t, store, nil, mutate)
	if err != nil {
		t.Fatal(err)
	}
	if s := decode(cfg, "x-mutate", "yes"); !has(s, "x-mutated") {
		t.Error("matching request not delegated")
	}
	if s := decode(cfg, "x-mutate", "no"); has(s, "x-mutated") {
		t.Error("request that does not match delegated")
	}
	if s := decode(cfg); has(s, "x-mutated") {
		t.Error("request without the header delegated")
	}
	if got := counter(store, "filter_delegation_success"); got != 1 {
		t.Errorf("filter_delegation_success = %d, want 1", got)
	}
	if got := counter(store, "filter_delegation_error"); got != 0 {
		t.Errorf("filter_delegation_error = %d, want 0", got)
	}
}

func TestSamplePercent(t *testing.T) {
	const sample = `              sample_percent: {default_value: {numerator: 0}, runtime_key: composite.sample}
`
	store := stats.NewStore()
	cfg, err := compile(t, store, nil, mutate+sample)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if s := decode(cfg, "x-mutate", "yes"); has(s, "x-mutated") {
			t.Fatal("delegated at sample_percent 0")
		}
	}
	if got := counter(store, "filter_delegation_success"); got != 0 {
		t.Errorf("filter_delegation_success = %d, want 0", got)
	}
	// The runtime key overrides the default: 100%.
	cfg, err = compile(t, store, runtimeValues{"composite.sample": 100}, mutate+sample)
	if err != nil {
		t.Fatal(err)
	}
	if s := decode(cfg, "x-mutate", "yes"); !has(s, "x-mutated") {
		t.Error("not delegated at runtime sample 100")
	}
}

func has(s *httpfiltertest.Stream, name string) bool {
	_, ok := s.ReqHeaders.Get(name)
	return ok
}

func TestConfigErrors(t *testing.T) {
	const path = "xds_matcher.matcher_tree.exact_match_map.map[\"yes\"].action.typed_config."
	for _, tc := range []struct{ name, action, want string }{
		{"bad delegated config", `
              typed_config:
                name: f
                typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, abort: {http_status: 99}}
`, path + "typed_config.typed_config.abort"},
		{"router", `
              typed_config: {name: r, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}
`, path + "typed_config.typed_config: proxy.filters.http.router is the terminal filter"},
		{"unknown filter", `
              typed_config: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}
`, path + "typed_config.typed_config: filter type google.protobuf.Empty is not supported"},
		{"no filter", ``, path + "typed_config: one of typed_config, filter_chain and filter_chain_name is required"},
		{"two", mutate + `
              filter_chain_name: c
`, path + "only one of typed_config, dynamic_config, filter_chain and filter_chain_name may be set"},
		{"bad chain filter", `
              filter_chain:
                typed_config:
                - {name: ok, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer, max_request_bytes: 10}}
                - {name: f, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, abort: {http_status: 99}}}
`, path + "filter_chain.typed_config[1].typed_config.abort"},
		{"ecds", `
              dynamic_config: {name: d}
`, path + "dynamic_config: extension config discovery (ECDS) is not supported by Outrigger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(t, stats.NewStore(), nil, tc.action)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// chainMutation is a header_mutation adding x-<name>: 1 to requests.
func chainMutation(name string) string {
	return `{name: ` + name + `, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation, mutations: {request_mutations: [{append: {header: {key: x-` + name + `, value: "1"}}}]}}}`
}

func TestFilterChains(t *testing.T) {
	store := stats.NewStore()
	cfg, err := compile(t, store, nil, `
              filter_chain: {typed_config: [`+chainMutation("first")+`, `+chainMutation("second")+`]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if s := decode(cfg, "x-mutate", "yes"); !has(s, "x-first") || !has(s, "x-second") {
		t.Errorf("filter_chain did not run both filters: %v", s.ReqHeaders)
	}
	if got := counter(store, "filter_delegation_success"); got != 1 {
		t.Errorf("filter_delegation_success = %d, want 1 for one chain", got)
	}
}

func TestNamedFilterChains(t *testing.T) {
	var c matchingv3.ExtensionWithMatcher
	fromYAML(t, `
extension_config:
  name: composite
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.Composite
    named_filter_chains:
      tagging: {typed_config: [`+chainMutation("named")+`]}
xds_matcher:
  matcher_list:
    matchers:
    - predicate: {single_predicate: {input: {name: in, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-chain}}, value_match: {exact: tagging}}}
      on_match: {action: {name: a, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction, filter_chain_name: tagging}}}
    - predicate: {single_predicate: {input: {name: in, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-chain}}, value_match: {exact: missing}}}
      on_match: {action: {name: a, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction, filter_chain_name: missing}}}
`, &c)
	store := stats.NewStore()
	cfg, err := matchdelegate.Factory{}.Compile(&c, httpfilter.Context{Name: "composite", Stats: store, StatPrefix: "http.test.", Extensions: builtin.Registry(), LookupByName: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := decode(cfg, "x-chain", "tagging"); !has(s, "x-named") {
		t.Error("named chain not delegated to")
	}
	// A name no chain has applies no filter, as in Envoy.
	if s := decode(cfg, "x-chain", "missing"); has(s, "x-named") {
		t.Error("an unknown chain name ran a filter")
	}
	if got := counter(store, "filter_delegation_success"); got != 1 {
		t.Errorf("filter_delegation_success = %d, want 1", got)
	}
}

func TestOwnMatcher(t *testing.T) {
	var c compositev3.Composite
	fromYAML(t, `
matcher:
  matcher_tree:
    input: {name: s, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput}}
    exact_match_map:
      map:
        "404":
          action:
            name: tag
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction
              typed_config: {name: hm, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation, mutations: {response_mutations: [{append: {header: {key: x-tag, value: "1"}}}]}}}
`, &c)
	store := stats.NewStore()
	ctx := httpfilter.Context{Name: "composite", Stats: store, StatPrefix: "http.test.", Extensions: builtin.Registry(), LookupByName: true}
	cfg, err := composite.Factory{}.Compile(&c, ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, status := range []int{404, 200} {
		s := httpfiltertest.NewStream("GET", "/")
		f := cfg.NewFilter()
		f.(httpfilter.Decoder).DecodeHeaders(s)
		s.Status = status
		f.(httpfilter.Encoder).EncodeHeaders(s)
		if _, ok := s.ResponseHeaders().Get("x-tag"); ok != (status == 404) {
			t.Errorf("status %d: tagged %v", status, ok)
		}
	}
	if got := counter(store, "filter_delegation_success"); got != 1 {
		t.Errorf("filter_delegation_success = %d, want 1", got)
	}

	// Inside an ExtensionWithMatcher, the composite's own matcher is
	// refused.
	var w matchingv3.ExtensionWithMatcher
	w.ExtensionConfig = &corev3.TypedExtensionConfig{Name: "composite"}
	if w.ExtensionConfig.TypedConfig, err = anypb.New(&c); err != nil {
		t.Fatal(err)
	}
	_, err = matchdelegate.Factory{}.Compile(&w, ctx)
	if err == nil || !strings.HasPrefix(err.Error(), "extension_config.typed_config.matcher: not supported by Outrigger in an ExtensionWithMatcher") {
		t.Fatalf("error %v, want the wrapped matcher refused", err)
	}
}

func TestRouteMatcher(t *testing.T) {
	store := stats.NewStore()
	ctx := httpfilter.Context{Name: "composite", Stats: store, StatPrefix: "http.test.", Extensions: builtin.Registry(), LookupByName: true}
	var own compositev3.Composite
	fromYAML(t, `named_filter_chains: {tagging: {typed_config: [`+chainMutation("named")+`]}}`, &own)
	cfg, err := composite.Factory{}.Compile(&own, ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pr compositev3.CompositePerRoute
	fromYAML(t, `
matcher:
  matcher_tree:
    input: {name: in, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-route}}
    exact_match_map:
      map:
        "named": {action: {name: a, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction, filter_chain_name: tagging}}}
        "own": {action: {name: a, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction, typed_config: `+chainMutation("own")+`}}}
`, &pr)
	rc, err := composite.Factory{}.CompileRoute(&pr, ctx)
	if err != nil {
		t.Fatal(err)
	}
	run := func(value string) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/", "x-route", value)
		s.PerRoute = map[string][]httpfilter.RouteConfig{"composite": {rc}}
		cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
		return s
	}
	if s := run("named"); !has(s, "x-named") {
		t.Error("the route's matcher did not delegate to the composite's named chain")
	}
	if s := run("own"); !has(s, "x-own") {
		t.Error("the route's matcher did not delegate to its own filter")
	}
	if s := run("other"); has(s, "x-named") || has(s, "x-own") {
		t.Error("delegated without a match")
	}
}

// closingFactory builds a test filter (config StringValue) whose
// configuration holds a resource: it counts the configurations closed.
type closingFactory struct{ closes *atomic.Int64 }

func (f closingFactory) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return closingConfig(f), nil
}

type closingConfig struct{ closes *atomic.Int64 }

func (c closingConfig) NewFilter() httpfilter.Filter { return closingFilter{} }

func (c closingConfig) Close() error {
	c.closes.Add(1)
	return nil
}

type closingFilter struct{}

func (closingFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	s.RequestHeaders().Set("x-closing", "1")
	return httpfilter.Continue
}

// TestRouteMatcherHoldsResources checks that a CompositePerRoute delegates
// to filters that hold resources (a Lua script, a test filter), and that
// closing the compiled per-route configuration, as the connection manager
// does once its route configuration is replaced and unused, closes them.
func TestRouteMatcherHoldsResources(t *testing.T) {
	var closes atomic.Int64
	reg, err := extension.New(append(builtin.Registry().List(),
		extension.Of("test.closing", "envoy.filters.http", &wrapperspb.StringValue{}, closingFactory{closes: &closes}))...)
	if err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	ctx := httpfilter.Context{Name: "composite", Stats: store, StatPrefix: "http.test.", Extensions: reg, LookupByName: true}
	cfg, err := composite.Factory{}.Compile(&compositev3.Composite{}, ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pr compositev3.CompositePerRoute
	fromYAML(t, `
matcher:
  on_no_match:
    action:
      name: a
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction
        filter_chain:
          typed_config:
          - {name: closing, typed_config: {"@type": type.googleapis.com/google.protobuf.StringValue, value: x}}
          - {name: lua, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "function envoy_on_request(h) h:headers():add('x-lua', '1') end"}}}
`, &pr)
	rc, err := composite.Factory{}.CompileRoute(&pr, ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"composite": {rc}}
	f := cfg.NewFilter()
	f.(httpfilter.Decoder).DecodeHeaders(s)
	if d, ok := f.(interface{ OnDestroy() }); ok {
		d.OnDestroy()
	}
	if !has(s, "x-closing") || !has(s, "x-lua") {
		t.Fatalf("the route's matcher did not delegate to both filters: %v", s.ReqHeaders)
	}
	if n := closes.Load(); n != 0 {
		t.Fatalf("closed %d times before the route configuration was", n)
	}
	c, ok := rc.(io.Closer)
	if !ok {
		t.Fatal("a CompositePerRoute holding resources is not an io.Closer: nothing would close its filters")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := closes.Load(); n != 1 {
		t.Fatalf("the delegated filter's configuration closed %d times, want 1", n)
	}
}
