package e2e

import (
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The type URLs of the matcher cluster specifier and the CEL matching.
const (
	matcherClusterSpecifierType = "type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.MatcherClusterSpecifier"
	clusterActionType           = "type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction"
)

// celPredicate is a single_predicate holding when the CEL expression
// (text) does.
func celPredicate(expr string) string {
	return `{single_predicate: {input: {name: cel, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.HttpAttributesCelMatchInput}}, ` +
		`custom_match: {name: m, typed_config: {"@type": type.googleapis.com/xds.type.matcher.v3.CelMatcher, expr_match: {cel_expr_string: "` + expr + `"}}}}}`
}

// toCluster is an on_match naming a cluster; keep sets keep_matching.
func toCluster(name string, keep bool) string {
	k := ""
	if keep {
		k = "keep_matching: true, "
	}
	return `{` + k + `action: {name: c, typed_config: {"@type": ` + clusterActionType + `, cluster: ` + name + `}}}`
}

// matcherCELSpec is a listener (stat prefix mcel) whose one route picks
// its cluster with the matcher plugin: x-preview (any value) names
// blue_cluster with keep_matching (skipped, as in Envoy), x-color: blue
// names blue_cluster, a CEL expression (a POST under /green) names
// green_cluster, and nothing else matches (no cluster: 503). A composite
// filter aborts with 418 the requests a CEL expression picks (a DELETE
// with x-deny: yes). The access log prints %CEL% values.
func matcherCELSpec(port, green, blue int) string {
	plugin := `{matcher_list: {matchers: [` +
		`{predicate: {single_predicate: {input: ` + headerInput("HttpRequestHeaderMatchInput", "x-preview") + `, value_match: {safe_regex: {google_re2: {}, regex: ".*"}}}}, on_match: ` + toCluster("blue_cluster", true) + `}, ` +
		`{predicate: {single_predicate: {input: ` + headerInput("HttpRequestHeaderMatchInput", "x-color") + `, value_match: {exact: blue}}}, on_match: ` + toCluster("blue_cluster", false) + `}, ` +
		`{predicate: ` + celPredicate(`request.method == 'POST' && request.path.startsWith('/green')`) + `, on_match: ` + toCluster("green_cluster", false) + `}]}}`
	deny := `{matcher_list: {matchers: [{predicate: ` + celPredicate(`request.method == 'DELETE' && request.headers['x-deny'] == 'yes'`) +
		`, on_match: ` + delegateTo(faultType, `{abort: {http_status: 418, percentage: {numerator: 100}}}`) + `}]}}`
	return proxySpec{
		Port: port,
		HCM: `{stat_prefix: mcel, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			log_format: {text_format_source: {inline_string: "MCEL %REQ(:METHOD)% %REQ(:PATH)% %CEL(xds.cluster_name)% %CEL(response.code)% %CEL(request.headers['x-color']):3%\n"}}}}]}`,
		Routes: `[{match: {prefix: /}, route: {inline_cluster_specifier_plugin: {extension: {name: envoy.router.cluster_specifier_plugin.matcher, typed_config: ` +
			withType(matcherClusterSpecifierType, `{cluster_matcher: `+plugin+`}`) + `}}}}]`,
		Filters:  `[{name: deny, typed_config: ` + withMatcher(`{name: composite, typed_config: {"@type": `+compositeType+`}}`, deny) + `}]`,
		Clusters: []proxyCluster{{Name: "green_cluster", Port: green}, {Name: "blue_cluster", Port: blue}},
	}.YAML()
}

var _ = Describe("The unified matcher's CEL matching, the matcher cluster specifier and %CEL%", Ordered, func() {
	client := &http.Client{Timeout: 5 * time.Second}
	var (
		s    *Sidecar
		port int
	)
	BeforeAll(func() {
		port = freePort()
		s = Start(newDir(), matcherCELSpec(port, portNum(colorUpstream("green")), portNum(colorUpstream("blue"))), "--config-yaml", luaAdminOverlay, "--file-flush-interval-msec", "50")
	})
	do := func(method, path string, header ...string) Response {
		GinkgoHelper()
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h[header[i]] = []string{header[i+1]}
		}
		return httpDo(client, method, listenerURL(port, path), nil, h)
	}

	It("picks the cluster with the matcher plugin: a header, a CEL expression, and no cluster when nothing matches", func() {
		r := do("GET", "/a", "x-color", "blue")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("blue /a"))
		r = do("POST", "/green/1")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("green /green/1"))
		// The CEL expression does not hold for a GET: no cluster.
		Expect(do("GET", "/green/1").Status).To(Equal(503))
		Expect(statValue(s, "http.mcel.no_cluster")).To(Equal("1"))
	})

	It("skips a keep_matching match and goes on, as Envoy does", func() {
		Expect(do("GET", "/p", "x-preview", "1").Status).To(Equal(503))
		r := do("GET", "/p", "x-preview", "1", "x-color", "blue")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("blue /p"))
		Expect(statValue(s, "http.mcel.no_cluster")).To(Equal("2"))
	})

	It("runs a composite filter's action where a CEL expression holds", func() {
		Expect(do("DELETE", "/d", "x-deny", "yes", "x-color", "blue").Status).To(Equal(418))
		r := do("DELETE", "/d", "x-deny", "no", "x-color", "blue")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("blue /d"))
	})

	It("logs %CEL(...)% values, truncated to their length, missing ones as '-'", func() {
		// The last requests' lines come last.
		Eventually(func() int { return strings.Count(s.Stdout(), "MCEL DELETE /d ") }, 10*time.Second).Should(Equal(2))
		out := s.Stdout()
		Expect(out).To(ContainSubstring("MCEL GET /a blue_cluster 200 blu\n"))
		Expect(out).To(ContainSubstring("MCEL POST /green/1 green_cluster 200 -\n"))
		Expect(out).To(ContainSubstring("MCEL GET /green/1 - 503 -\n"))
		Expect(out).To(ContainSubstring("MCEL DELETE /d - 418 blu\n"))
	})

	It("refuses at load a CEL expression that does not compile, naming the field", func() {
		cfg := strings.Replace(matcherCELSpec(freePort(), 1, 2), `request.method == 'POST'`, `request.method ==`, 1)
		dir := newDir()
		path := dir + "/bootstrap.yaml"
		writeFile(path, cfg)
		r := Run("--mode", "validate", "-c", path)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("inline_cluster_specifier_plugin.extension.typed_config.cluster_matcher.matcher_list.matchers[2].predicate.single_predicate.custom_match.typed_config.expr_match.cel_expr_string: "))
	})
})
