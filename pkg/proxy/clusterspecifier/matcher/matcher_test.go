package matcher

import (
	"strings"
	"testing"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// headers is a header map over a Go map.
type headers map[string]string

func (h headers) Get(n string) (string, bool) { v, ok := h[n]; return v, ok }

func action(cluster string) string {
	return `{"action": {"name": "c", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction", "cluster": "` + cluster + `"}}}`
}

// config routes x-env: canary to "canary", a request whose CEL
// expression holds (a POST to /admin) to "admin", others to nothing.
const config = `{"cluster_matcher": {"matcher_list": {"matchers": [
  {"predicate": {"single_predicate": {"input": {"name": "h", "typed_config": {"@type": "type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput", "header_name": "x-env"}}, "value_match": {"exact": "canary"}}}, "on_match": ` + `ACTION_CANARY` + `},
  {"predicate": {"single_predicate": {"input": {"name": "cel", "typed_config": {"@type": "type.googleapis.com/xds.type.matcher.v3.HttpAttributesCelMatchInput"}},
    "custom_match": {"name": "m", "typed_config": {"@type": "type.googleapis.com/xds.type.matcher.v3.CelMatcher", "expr_match": {"cel_expr_string": "request.method == 'POST' && request.path.startsWith('/admin')"}}}}}, "on_match": ` + `ACTION_ADMIN` + `}]}}}`

func compile(t *testing.T, js string) (router.ClusterSpecifier, error) {
	t.Helper()
	var c matcherv3.MatcherClusterSpecifier
	if err := protojson.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return Factory{}.Compile(&c, clusterspecifier.Context{})
}

func TestCluster(t *testing.T) {
	js := strings.NewReplacer("ACTION_CANARY", action("canary"), "ACTION_ADMIN", action("admin")).Replace(config)
	cs, err := compile(t, js)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    router.Request
		want string
	}{
		{"header", router.Request{Method: "GET", Path: "/", Headers: headers{"x-env": "canary"}}, "canary"},
		{"CEL", router.Request{Method: "POST", Path: "/admin/users", Headers: headers{}}, "admin"},
		{"CEL without headers", router.Request{Method: "POST", Path: "/admin"}, "admin"},
		{"no match: no cluster", router.Request{Method: "GET", Path: "/admin", Headers: headers{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cs.Cluster(&tc.r); got != tc.want {
				t.Errorf("Cluster = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for name, tc := range map[string]struct{ js, want string }{
		"no matcher":    {`{}`, "cluster_matcher: required"},
		"empty cluster": {`{"cluster_matcher": {"on_no_match": ` + action("") + `}}`, "cluster_matcher.on_no_match.action.typed_config.cluster: must be set"},
		"other action": {`{"cluster_matcher": {"on_no_match": {"action": {"name": "s", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "x"}}}}}`,
			"cluster_matcher.on_no_match.action.typed_config: action google.protobuf.StringValue is not a cluster specifier action"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compile(t, tc.js)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
