package headermutation

import (
	"strings"
	"testing"

	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

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
		{`mutations: {query_parameter_mutations: [{remove: a}]}`, "mutations.query_parameter_mutations: not supported"},
		{`mutations: {response_trailers_mutations: [{remove: a}]}`, "mutations.response_trailers_mutations: not supported"},
		{`mutations: {request_trailers_mutations: [{remove: a}]}`, "mutations.request_trailers_mutations: not supported"},
		{`mutations: {request_mutations: [{remove: a}, {remove_on_match: {key_matcher: {exact: a}}}]}`, "mutations.request_mutations[1].remove_on_match: not supported"},
		{`mutations: {request_mutations: [{append: {header: {key: x, value: "%REQ(y)%"}}}]}`, "mutations.request_mutations[0].append.header.value: command operators"},
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
