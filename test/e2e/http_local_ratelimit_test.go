package e2e

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// localRateLimitBootstrap has the local rate limit filter with a bucket of
// two tokens refilled every minute (so none come back during a spec), and
// a route /strict with its own bucket of one token and status 503, in
// front of an upstream that answers which request header marked it.
func localRateLimitBootstrap(port, upPort int) string {
	const rl = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: edge}",
		Top:  "{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}",
		Routes: `[{match: {prefix: /strict}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.local_ratelimit: ` + withType(rl, `{
			stat_prefix: strict, status: {code: ServiceUnavailable},
			token_bucket: {max_tokens: 1, tokens_per_fill: 1, fill_interval: 60s},
			filter_enabled: {default_value: {numerator: 100}},
			filter_enforced: {default_value: {numerator: 100}}}`) + `}},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: `[` + httpFilter("envoy.filters.http.local_ratelimit", rl, `{
			stat_prefix: edge_rl,
			token_bucket: {max_tokens: 2, tokens_per_fill: 2, fill_interval: 60s},
			filter_enabled: {runtime_key: rl.enabled, default_value: {numerator: 100}},
			filter_enforced: {runtime_key: rl.enforced, default_value: {numerator: 100}},
			enable_x_ratelimit_headers: DRAFT_VERSION_03,
			response_headers_to_add: [{header: {key: x-local-rate-limit, value: "true"}}],
			request_headers_to_add_when_not_enforced: [{header: {key: x-would-be-limited, value: "yes"}}]}`) + `]`,
		Clusters: []proxyCluster{{Name: "up", Port: upPort}},
	}.YAML()
}

var _ = Describe("The local rate limit filter", func() {
	It("limits with its token bucket, per route where configured, with Envoy's answers, headers and stats, and only counts when not enforced", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "up would-be-limited=%s", r.Header.Get("X-Would-Be-Limited"))
		}), false))
		port := freePort()
		s := Start(newDir(), localRateLimitBootstrap(port, up))
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(path string) Response {
			GinkgoHelper()
			return httpDo(client, "GET", listenerURL(port, path), nil, nil)
		}

		// The connection manager's bucket: two tokens, then 429.
		r := get("/a")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("X-Ratelimit-Limit")).To(Equal("2"))
		Expect(r.Header.Get("X-Ratelimit-Remaining")).To(Equal("1"))
		Expect(get("/b").Status).To(Equal(200))
		r = get("/c")
		Expect(r.Status).To(Equal(429))
		Expect(r.Body).To(Equal("local_rate_limited"))
		Expect(r.Header.Get("X-Local-Rate-Limit")).To(Equal("true"))
		Expect(r.Header.Get("X-Ratelimit-Remaining")).To(Equal("0"))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.enabled")).To(Equal("3"))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.ok")).To(Equal("2"))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.rate_limited")).To(Equal("1"))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.enforced")).To(Equal("1"))

		// The route's own bucket and status.
		Expect(get("/strict/1").Status).To(Equal(200))
		Expect(get("/strict/2").Status).To(Equal(503))
		Expect(statValue(s, "strict.http_local_rate_limit.rate_limited")).To(Equal("1"))

		// Not enforced (the runtime turns enforcement off): the limited
		// request goes on, marked, and is counted as limited.
		Expect(s.Post("/runtime_modify?rl.enforced=0").Status).To(Equal(200))
		r = get("/d")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("up would-be-limited=yes"))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.rate_limited")).To(Equal("2"))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.enforced")).To(Equal("1"))
		// Disabled: not even counted.
		Expect(s.Post("/runtime_modify?rl.enabled=0").Status).To(Equal(200))
		Expect(get("/e").Body).To(Equal("up would-be-limited="))
		Expect(statValue(s, "edge_rl.http_local_rate_limit.enabled")).To(Equal("4"))
	})
})

var _ = Describe("The local rate limit filter's descriptors", func() {
	It("are made of the route's query parameter actions: query_parameters and query_parameter_value_match", func() {
		const rl = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "up")
		}), false))
		port := freePort()
		// The filter's own bucket is large; the descriptors' buckets hold
		// one token each, refilled hourly (never during the spec).
		oneToken := "token_bucket: {max_tokens: 1, tokens_per_fill: 1, fill_interval: 3600s}"
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: edge}",
			Routes: `[{match: {prefix: /}, route: {cluster: up, rate_limits: [
				{actions: [{query_parameters: {query_parameter_name: user, descriptor_key: user}}]},
				{actions: [{query_parameter_value_match: {descriptor_key: tier, descriptor_value: free,
					query_parameters: [{name: plan, string_match: {exact: free}}]}}]}]}}]`,
			Filters: `[` + httpFilter("envoy.filters.http.local_ratelimit", rl, `{
				stat_prefix: q,
				token_bucket: {max_tokens: 100, tokens_per_fill: 100, fill_interval: 3600s},
				filter_enabled: {default_value: {numerator: 100}},
				filter_enforced: {default_value: {numerator: 100}},
				descriptors: [
					{entries: [{key: user, value: "ann lee"}], `+oneToken+`},
					{entries: [{key: tier, value: free}], `+oneToken+`}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(path string) int {
			GinkgoHelper()
			return httpDo(client, "GET", listenerURL(port, path), nil, nil).Status
		}

		Expect(get("/?user=ann%20lee")).To(Equal(200))
		Expect(get("/?user=ann%20lee")).To(Equal(429), "the decoded value is the descriptor's: its one token is spent")
		Expect(get("/?user=bob")).To(Equal(200), "another user has no descriptor bucket")
		Expect(get("/?user=bob")).To(Equal(200))

		Expect(get("/?plan=free")).To(Equal(200))
		Expect(get("/?plan=free")).To(Equal(429), "query_parameter_value_match made the tier entry")
		Expect(get("/?plan=pro")).To(Equal(200), "no match, no descriptor")
	})
})

var _ = Describe("The local rate limit filter with the route's hits_addend and x_ratelimit_option", func() {
	It("takes hits_addend tokens of a descriptor's bucket, gives them back with is_negative_hits, and follows the entry's x_ratelimit_option for the headers", func() {
		const rl = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "up")
		}), false))
		port := freePort()
		// Buckets refill hourly: never during the spec.
		tokens := func(n int) string {
			return fmt.Sprintf("token_bucket: {max_tokens: %d, tokens_per_fill: %d, fill_interval: 3600s}", n, n)
		}
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: edge}",
			Routes: `[{match: {prefix: /hits}, route: {cluster: up, rate_limits: [
					{hits_addend: {number: 3}, actions: [{generic_key: {descriptor_value: hits}}]}]}},
				{match: {prefix: /refund}, route: {cluster: up, rate_limits: [
					{hits_addend: {number: 5, is_negative_hits: true}, actions: [{generic_key: {descriptor_value: hits}}]}]}},
				{match: {prefix: /fmt}, route: {cluster: up, rate_limits: [
					{hits_addend: {format: "%REQ(x-cost)%"}, actions: [{generic_key: {descriptor_value: fmt}}]}]}},
				{match: {prefix: /on}, route: {cluster: up, rate_limits: [
					{x_ratelimit_option: DRAFT_VERSION_03, actions: [{generic_key: {descriptor_value: "on"}}]}]}},
				{match: {prefix: /}, route: {cluster: up}}]`,
			Filters: `[` + httpFilter("envoy.filters.http.local_ratelimit", rl, `{
				stat_prefix: h,
				token_bucket: {max_tokens: 100, tokens_per_fill: 100, fill_interval: 3600s},
				filter_enabled: {default_value: {numerator: 100}},
				filter_enforced: {default_value: {numerator: 100}},
				descriptors: [
					{entries: [{key: generic_key, value: hits}], `+tokens(7)+`},
					{entries: [{key: generic_key, value: fmt}], `+tokens(5)+`},
					{entries: [{key: generic_key, value: "on"}], `+tokens(4)+`}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(path string, h http.Header) Response {
			GinkgoHelper()
			return httpDo(client, "GET", listenerURL(port, path), nil, h)
		}

		Expect(get("/hits", nil).Status).To(Equal(200), "3 of 7 tokens")
		Expect(get("/hits", nil).Status).To(Equal(200), "6 of 7 tokens")
		Expect(get("/hits", nil).Status).To(Equal(429), "3 more than the one left")
		Expect(get("/refund", nil).Status).To(Equal(200), "5 tokens given back: 6 of 7")
		Expect(get("/refund", nil).Status).To(Equal(200), "a refill is never denied; the bucket holds 7 at most")
		Expect(get("/hits", nil).Status).To(Equal(200), "3 of 7 tokens")
		Expect(get("/hits", nil).Status).To(Equal(200), "6 of 7 tokens")
		Expect(get("/hits", nil).Status).To(Equal(429), "3 more than the one left: the refills stopped at 7")

		Expect(get("/fmt", http.Header{"X-Cost": {"5"}}).Status).To(Equal(200), "the formatted hits take the whole bucket")
		Expect(get("/fmt", http.Header{"X-Cost": {"0"}}).Status).To(Equal(200), "no token taken")
		Expect(get("/fmt", http.Header{"X-Cost": {"nope"}}).Status).To(Equal(200), "no number: no descriptor, the filter's own bucket decides")
		Expect(get("/fmt", http.Header{"X-Cost": {"1"}}).Status).To(Equal(429))

		r := get("/on", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("X-Ratelimit-Limit")).To(Equal("4"), "DRAFT_VERSION_03 where the filter has no headers")
		Expect(r.Header.Get("X-Ratelimit-Remaining")).To(Equal("3"))
		r = get("/other", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("X-Ratelimit-Limit")).To(BeEmpty(), "the filter's setting for the default bucket")
	})

	It("counts a shadow_mode descriptor that runs out as rate limited, never enforcing it, while the other buckets still are", func() {
		const rl = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "up")
		}), false))
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: edge}",
			Routes: `[{match: {prefix: /}, route: {cluster: up, rate_limits: [
					{actions: [{generic_key: {descriptor_value: shadowed}}]}]}}]`,
			Filters: `[` + httpFilter("envoy.filters.http.local_ratelimit", rl, `{
				stat_prefix: sh,
				token_bucket: {max_tokens: 3, tokens_per_fill: 3, fill_interval: 3600s},
				filter_enabled: {default_value: {numerator: 100}},
				filter_enforced: {default_value: {numerator: 100}},
				descriptors: [{entries: [{key: generic_key, value: shadowed}], shadow_mode: true,
					token_bucket: {max_tokens: 1, tokens_per_fill: 1, fill_interval: 3600s}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		for i, want := range []int{200, 200, 200, 429} {
			Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Status).To(Equal(want), "request %d", i)
		}
		Expect(statValue(s, "sh.http_local_rate_limit.ok")).To(Equal("1"), "the shadow bucket had one token")
		Expect(statValue(s, "sh.http_local_rate_limit.rate_limited")).To(Equal("3"))
		Expect(statValue(s, "sh.http_local_rate_limit.enforced")).To(Equal("1"), "only the default bucket (3 tokens, always taken) enforces")
	})
})
