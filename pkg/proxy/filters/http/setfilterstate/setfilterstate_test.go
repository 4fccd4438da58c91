package setfilterstate

import (
	"testing"

	sfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_filter_state/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

func compile(t *testing.T, y string) (httpfilter.Config, error) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var c sfsv3.Config
	if err := protojson.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	return Factory{}.Compile(&c, httpfilter.Context{Name: "sfs"})
}

func TestSetsTheRequestFilterState(t *testing.T) {
	cfg, err := compile(t, `
on_request_headers:
- object_key: acme.tenant
  factory_key: envoy.string
  format_string: {text_format_source: {inline_string: "%REQ(x-tenant)%"}}
- object_key: acme.by_path
  factory_key: envoy.hashable_string
  format_string: {text_format_source: {inline_string: "%REQ(:path)%"}}
clear_route_cache: true
`)
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/a", "x-tenant", "gold")
	if st := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("status %v", st)
	}
	if got := s.FilterState["acme.tenant"]; got != filterstate.String("gold") {
		t.Errorf("acme.tenant %#v", got)
	}
	if got := s.FilterState["acme.by_path"]; got != filterstate.HashableString("/a") {
		t.Errorf("acme.by_path %#v", got)
	}
	if s.RouteCleared != 1 {
		t.Errorf("route cleared %d times, want once", s.RouteCleared)
	}
}

func TestKeepsTheRouteWithoutClearRouteCache(t *testing.T) {
	cfg, err := compile(t, `
on_request_headers:
- object_key: envoy.tcp_proxy.cluster
  format_string: {text_format_source: {inline_string: "c"}}
`)
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if s.RouteCleared != 0 || s.FilterState["envoy.tcp_proxy.cluster"] != filterstate.String("c") {
		t.Errorf("route cleared %d, state %v", s.RouteCleared, s.FilterState)
	}
}

func TestRefusesAKeyWithoutFactory(t *testing.T) {
	_, err := compile(t, `
on_request_headers:
- object_key: acme.custom
  format_string: {text_format_source: {inline_string: "x"}}
`)
	if err == nil || err.Error() == "" {
		t.Fatal("a key without a factory was accepted")
	}
}
