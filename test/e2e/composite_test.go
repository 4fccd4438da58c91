package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The type URLs of the matcher API's messages.
const (
	extensionWithMatcherType = "type.googleapis.com/envoy.extensions.common.matching.v3.ExtensionWithMatcher"
	matcherPerRouteType      = "type.googleapis.com/envoy.extensions.common.matching.v3.ExtensionWithMatcherPerRoute"
	executeFilterType        = "type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction"
	skipFilterType           = "type.googleapis.com/envoy.extensions.filters.common.matcher.action.v3.SkipFilter"
	compositeType            = "type.googleapis.com/envoy.extensions.filters.http.composite.v3.Composite"
	compositePerRouteType    = "type.googleapis.com/envoy.extensions.filters.http.composite.v3.CompositePerRoute"
)

// withMatcher is the typed_config of an ExtensionWithMatcher wrapping the
// filter ext (a TypedExtensionConfig, YAML flow mapping) with xdsMatcher
// (a YAML flow mapping, "" for none).
func withMatcher(ext, xdsMatcher string) string {
	fields := "{extension_config: " + ext
	if xdsMatcher != "" {
		fields += ", xds_matcher: " + xdsMatcher
	}
	return withType(extensionWithMatcherType, fields+"}")
}

// headerInput is a matcher input reading the request header name.
func headerInput(kind, name string) string {
	return `{name: in, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.` + kind + `, header_name: ` + name + `}}`
}

// delegateTo is an on_match whose ExecuteFilterAction delegates to the
// filter of type typeURL with fields.
func delegateTo(typeURL, fields string) string {
	return `{action: {name: delegate, typed_config: ` + withType(executeFilterType, `{typed_config: {name: delegated, typed_config: `+withType(typeURL, fields)+`}}`) + `}}`
}

// skipOnHeader is an xds_matcher skipping its filter when the request
// header name reads value.
func skipOnHeader(name, value string) string {
	return `{matcher_list: {matchers: [{predicate: {single_predicate: {input: ` + headerInput("HttpRequestHeaderMatchInput", name) +
		`, value_match: {exact: "` + value + `"}}}, on_match: {action: {name: skip, typed_config: {"@type": ` + skipFilterType + `}}}}]}}`
}

const (
	faultType          = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
	localRateLimitType = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
)

// compositeSpec is a listener (stat prefix comp) whose composite filter
// picks, by the request's x-fault-category, a fault abort ("abort"), a
// header_mutation tagging the response ("tag") or a chain of two
// ("chain"); a second composite, straight in http_filters with a
// matcher of its own, tags 404 responses, decided on the response status,
// but on /override its CompositePerRoute's matcher tags requests with
// x-override: yes instead. /gone is a direct 404.
func compositeSpec(port, upPort int) string {
	byCategory := `{matcher_tree: {input: ` + headerInput("HttpRequestHeaderMatchInput", "x-fault-category") + `, exact_match_map: {map: {` +
		`abort: ` + delegateTo(faultType, `{abort: {http_status: 503, percentage: {numerator: 100}}}`) + `, ` +
		`tag: ` + delegateTo(headerMutationType, `{mutations: {response_mutations: [{append: {header: {key: x-tagged, value: "yes"}}}]}}`) + `, ` +
		`chain: {action: {name: chain, typed_config: ` + withType(executeFilterType, `{filter_chain: {typed_config: [`+
		`{name: one, typed_config: `+withType(headerMutationType, `{mutations: {response_mutations: [{append: {header: {key: x-chain, value: one}}}]}}`)+`}, `+
		`{name: two, typed_config: `+withType(headerMutationType, `{mutations: {response_mutations: [{append: {header: {key: x-chain, value: two}}}]}}`)+`}]}}`) + `}}}}}}`
	byStatus := `{matcher_tree: {input: {name: status, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput}}, exact_match_map: {map: {` +
		`"404": ` + delegateTo(headerMutationType, `{mutations: {response_mutations: [{append: {header: {key: x-was-404, value: "yes"}}}]}}`) + `}}}}`
	byOverride := `{matcher_list: {matchers: [{predicate: {single_predicate: {input: ` + headerInput("HttpRequestHeaderMatchInput", "x-override") +
		`, value_match: {exact: "yes"}}}, on_match: ` + delegateTo(headerMutationType, `{mutations: {response_mutations: [{append: {header: {key: x-overridden, value: "yes"}}}]}}`) + `}]}}`
	composite := `{name: composite, typed_config: {"@type": ` + compositeType + `}}`
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: comp}",
		Routes: `[{match: {prefix: /gone}, direct_response: {status: 404}}, ` +
			`{match: {prefix: /override}, route: {cluster: up}, typed_per_filter_config: {by-status: ` + withType(compositePerRouteType, `{matcher: `+byOverride+`}`) + `}}, ` +
			`{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: `[{name: by-category, typed_config: ` + withMatcher(composite, byCategory) + `}, ` +
			`{name: by-status, typed_config: ` + withType(compositeType, `{matcher: `+byStatus+`}`) + `}]`,
		Clusters: []proxyCluster{{Name: "up", Port: upPort}},
	}.YAML()
}

// skipSpec is a listener whose local rate limit (one token an hour) is
// skipped for requests with x-internal: yes, and on /free for those with
// x-free: yes instead (the route's ExtensionWithMatcherPerRoute).
func skipSpec(port, upPort int) string {
	rl := `{name: rl, typed_config: ` + withType(localRateLimitType, `{stat_prefix: rl,
		token_bucket: {max_tokens: 1, tokens_per_fill: 1, fill_interval: 3600s},
		filter_enabled: {default_value: {numerator: 100}}, filter_enforced: {default_value: {numerator: 100}}}`) + `}`
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: skipping}",
		Routes: `[{match: {prefix: /free}, route: {cluster: up}, typed_per_filter_config: {limited: ` +
			withType(matcherPerRouteType, `{xds_matcher: `+skipOnHeader("x-free", "yes")+`}`) + `}}, {match: {prefix: /}, route: {cluster: up}}]`,
		Filters:  `[{name: limited, typed_config: ` + withMatcher(rl, skipOnHeader("x-internal", "yes")) + `}]`,
		Clusters: []proxyCluster{{Name: "up", Port: upPort}},
	}.YAML()
}

var _ = Describe("The composite filter and ExtensionWithMatcher", func() {
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(port int, path string, h http.Header) Response {
		GinkgoHelper()
		return httpDo(client, "GET", listenerURL(port, path), nil, h)
	}

	It("delegates to the filter the matched action names, only for the requests that match, and counts the delegations", func() {
		port := freePort()
		s := Start(newDir(), compositeSpec(port, namedUpstream("up")))

		r := get(port, "/", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("up "))
		Expect(r.Header.Get("X-Tagged")).To(BeEmpty())

		r = get(port, "/", http.Header{"X-Fault-Category": {"abort"}})
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("fault filter abort"))

		r = get(port, "/", http.Header{"X-Fault-Category": {"tag"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("up "))
		Expect(r.Header.Get("X-Tagged")).To(Equal("yes"))

		// A chain: encoded in reverse order, the second filter first.
		r = get(port, "/", http.Header{"X-Fault-Category": {"chain"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Values("X-Chain")).To(Equal([]string{"two", "one"}))

		r = get(port, "/", http.Header{"X-Fault-Category": {"other"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("X-Tagged")).To(BeEmpty())

		// The second composite, with its own matcher, decides on the
		// response status.
		r = get(port, "/gone", nil)
		Expect(r.Status).To(Equal(404))
		Expect(r.Header.Get("X-Was-404")).To(Equal("yes"))
		Expect(get(port, "/", nil).Header.Get("X-Was-404")).To(BeEmpty())

		// On /override the route's matcher replaces the second
		// composite's.
		r = get(port, "/override", http.Header{"X-Override": {"yes"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("X-Overridden")).To(Equal("yes"))
		Expect(get(port, "/override", nil).Header.Get("X-Overridden")).To(BeEmpty())

		// Both composites count under the connection manager's prefix;
		// the delegated fault filter keeps its own stats there too.
		Expect(statValue(s, "http.comp.composite.filter_delegation_success")).To(Equal("5"))
		Expect(statValue(s, "http.comp.composite.filter_delegation_error")).To(Equal("0"))
		Expect(statValue(s, "http.comp.fault.aborts_injected")).To(Equal("1"))
	})

	It("skips the wrapped filter when a SkipFilter action matches, with the route's matcher in place of the filter's where it has one", func() {
		port := freePort()
		s := Start(newDir(), skipSpec(port, namedUpstream("up")))
		internal := http.Header{"X-Internal": {"yes"}}

		// The bucket's one token, then 429; skipped requests pass.
		Expect(get(port, "/", nil).Status).To(Equal(200))
		Expect(get(port, "/", nil).Status).To(Equal(429))
		for range 3 {
			Expect(get(port, "/", internal).Status).To(Equal(200))
		}
		// On /free the route's matcher applies: x-free skips, x-internal
		// no longer does.
		Expect(get(port, "/free", http.Header{"X-Free": {"yes"}}).Status).To(Equal(200))
		Expect(get(port, "/free", internal).Status).To(Equal(429))
		// Skipped requests never reach the filter.
		Expect(statValue(s, "rl.http_local_rate_limit.enabled")).To(Equal("3"))
		Expect(statValue(s, "rl.http_local_rate_limit.rate_limited")).To(Equal("2"))
	})

	It("refuses what it does not implement, and bad delegated filters, with the field path", func() {
		hm := `{name: hm, typed_config: ` + withType(headerMutationType, `{}`) + `}`
		composite := `{name: composite, typed_config: {"@type": ` + compositeType + `}}`
		for filter, want := range map[string]string{
			withMatcher(composite, `{on_no_match: `+delegateTo(faultType, `{abort: {http_status: 99, percentage: {numerator: 100}}}`)+`}`):             "http_filters[0].typed_config.xds_matcher.on_no_match.action.typed_config.typed_config.typed_config.abort.http_status",
			withMatcher(composite, `{on_no_match: {action: {name: d, typed_config: `+withType(executeFilterType, `{dynamic_config: {name: x}}`)+`}}}`): "http_filters[0].typed_config.xds_matcher.on_no_match.action.typed_config.dynamic_config",
			withMatcher(composite, `{on_no_match: `+delegateTo("type.googleapis.com/envoy.extensions.filters.http.router.v3.Router", `{}`)+`}`):        "is the terminal filter, which only ends the connection manager's chain",
			withMatcher(hm, `{on_no_match: `+delegateTo(faultType, `{}`)+`}`):                                                                          "http_filters[0].typed_config.xds_matcher.on_no_match.action.typed_config: action envoy.extensions.filters.http.composite.v3.ExecuteFilterAction is not supported by Outrigger for this filter",
			withType(extensionWithMatcherType, `{extension_config: `+hm+`, matcher: {matcher_tree: {input: {name: x}}}}`):                              "http_filters[0].typed_config.matcher",
			withMatcher(`{name: c, typed_config: `+withType(compositeType, `{matcher: {}}`)+`}`, ""):                                                   "http_filters[0].typed_config.extension_config.typed_config.matcher",
		} {
			spec := proxySpec{Port: freePort(), Filters: `[{name: wrapped, typed_config: ` + filter + `}]`, Clusters: []proxyCluster{{Name: "up", Port: freePort()}}}
			r, _ := validate("b.yaml", spec.YAML())
			Expect(r.ExitCode).To(Equal(1), filter)
			Expect(r.Stderr).To(ContainSubstring(want), filter)
		}
	})
})
