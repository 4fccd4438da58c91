package stats

import (
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/string_matcher/lua/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// A stats_matcher pattern may be the Lua string matcher.
func TestCustomStatsPattern(t *testing.T) {
	a, err := anypb.New(&luav3.Lua{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{
		InlineString: `function envoy_match(name) return string.sub(name, 1, 7) == "server." end`}}})
	if err != nil {
		t.Fatal(err)
	}
	sm, err := newStringMatcher(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{Name: "lua", TypedConfig: a}}})
	if err != nil {
		t.Fatal(err)
	}
	if !sm.match("server.uptime") || sm.match("cluster.x.upstream_rq") {
		t.Error("the script's answers were not the matcher's")
	}
	if _, err := newStringMatcher(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{Name: "x"}}}); err == nil {
		t.Error("a custom pattern without typed_config was accepted")
	}
}
