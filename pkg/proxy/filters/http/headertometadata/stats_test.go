package headertometadata

import (
	"reflect"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestStats checks Envoy's counters of a Config with stat_prefix, and
// that a route's Config counts under its own prefix only.
func TestStats(t *testing.T) {
	store := stats.NewStore()
	ctx := httpfilter.Context{Name: "h2m", Stats: store}
	cfg, err := Factory{}.Compile(parse(t, `
stat_prefix: conv
request_rules:
- header: x-version
  on_header_present: {key: version}
  on_header_missing: {key: version, value: none}
- header: x-b64
  on_header_present: {key: decoded, encode: BASE64}
- header: x-long
  on_header_present: {key: long}
- header: x-path
  on_header_present: {key: first, regex_value_rewrite: {pattern: {regex: "^/([^/]*)/.*$"}, substitution: "\\1"}}
response_rules:
- header: x-up
  on_header_present: {key: up}
`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.NewFilter()
	s := httpfiltertest.NewStream("GET", "/", "x-b64", "!!!", "x-long", strings.Repeat("a", maxValueLen), "x-path", "//rest")
	f.(httpfilter.Decoder).DecodeHeaders(s)
	s.RespHeaders = httpfiltertest.NewHeaders("x-up", "1")
	f.(httpfilter.Encoder).EncodeHeaders(s)

	route, err := Factory{}.CompileRoute(parse(t, `{stat_prefix: route, request_rules: [{header: x-r, on_header_present: {key: r}}]}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	s = httpfiltertest.NewStream("GET", "/", "x-r", "1")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"h2m": {route}}
	f.(httpfilter.Decoder).DecodeHeaders(s)

	want := map[string]uint64{
		"http_filter_name.conv.request_rules_processed":   4,
		"http_filter_name.conv.request_header_not_found":  1,
		"http_filter_name.conv.request_metadata_added":    1, // version: none
		"http_filter_name.conv.base64_decode_failed":      1,
		"http_filter_name.conv.header_value_too_long":     1,
		"http_filter_name.conv.regex_substitution_failed": 1,
		"http_filter_name.conv.response_rules_processed":  1,
		"http_filter_name.conv.response_metadata_added":   1,
		"http_filter_name.route.request_rules_processed":  1,
		"http_filter_name.route.request_metadata_added":   1,
	}
	got := make(map[string]uint64, len(want))
	for name := range want {
		got[name] = store.Counter(name).Value()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counters %v, want %v", got, want)
	}
}
