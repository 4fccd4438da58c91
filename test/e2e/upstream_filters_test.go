package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// attemptRecorder is an upstream that keeps the headers of every request
// it gets, and answers the first failFirst of them 503, the others 200.
type attemptRecorder struct {
	mu        sync.Mutex
	seen      []http.Header
	failFirst int
}

func (a *attemptRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	h := r.Header.Clone()
	// The protocol it came with, beside the headers.
	h.Set("X-Recorded-Proto", r.Proto)
	h.Set("X-Recorded-Path", r.URL.RequestURI())
	a.seen = append(a.seen, h)
	n := len(a.seen)
	a.mu.Unlock()
	w.Header().Set("x-upstream", "yes")
	if n <= a.failFirst {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// attempts returns the headers of the requests received so far.
func (a *attemptRecorder) attempts() []http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]http.Header(nil), a.seen...)
}

// upstreamChain is an upstream filter list, a YAML flow list: a header
// mutation filter with mutations (a YAML flow mapping), then the codec.
func upstreamChain(mutations string) string {
	GinkgoHelper()
	return "[" + httpFilter("envoy.filters.http.header_mutation", headerMutationType, `{mutations: `+mutations+`}`) + ", " + upstreamCodec + "]"
}

const upstreamCodec = `{name: envoy.filters.http.upstream_codec, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec}}`

var _ = Describe("Upstream HTTP filters", func() {
	plain := &http.Client{Timeout: 10 * time.Second}

	It("run the router's upstream_http_filters on every attempt and on the shadow, on the request as it goes upstream", func() {
		rec, shadow := &attemptRecorder{failFirst: 1}, &attemptRecorder{}
		port := freePort()
		Start(newDir(), proxySpec{
			Port:        port,
			HCM:         "{stat_prefix: web}",
			VirtualHost: `{include_request_attempt_count: true, request_headers_to_add: [{header: {key: x-route, value: r}}]}`,
			Routes: `[{match: {prefix: /}, route: {cluster: up, request_mirror_policies: [{cluster: shadow}],
				retry_policy: {retry_on: 5xx, num_retries: 2, retry_back_off: {base_interval: 0.001s}}}}]`,
			Router: `{upstream_http_filters: ` + upstreamChain(`{
				request_mutations: [{append: {header: {key: x-up, value: "yes"}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}}, {remove: x-route}],
				response_mutations: [{append: {header: {key: x-up-resp, value: "seen"}}}, {remove: x-upstream}]}`) + `}`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(httpTestUpstream(rec, false))}, {Name: "shadow", Port: portNum(httpTestUpstream(shadow, false))}},
		}.YAML())
		r := httpDo(plain, "GET", listenerURL(port, "/a"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("ok"))
		Expect(r.Header.Get("X-Up-Resp")).To(Equal("seen"))
		Expect(r.Header).NotTo(HaveKey("X-Upstream"))

		seen := rec.attempts()
		Expect(seen).To(HaveLen(2))
		for i, h := range seen {
			Expect(h.Values("X-Up")).To(Equal([]string{"yes"}), "attempt %d", i+1)
			// The route's request header (added before the upstream
			// filters run) is what the filter removed.
			Expect(h).NotTo(HaveKey("X-Route"), "attempt %d", i+1)
		}
		Expect(seen[0].Get("X-Envoy-Attempt-Count")).To(Equal("1"))
		Expect(seen[1].Get("X-Envoy-Attempt-Count")).To(Equal("2"))

		Eventually(shadow.attempts, 5*time.Second, 20*time.Millisecond).Should(HaveLen(1))
		Expect(shadow.attempts()[0].Values("X-Up")).To(Equal([]string{"yes"}))
		Expect(shadow.attempts()[0]).NotTo(HaveKey("X-Route"))
	})

	It("edit the query of the path as rewritten for the upstream, on every attempt", func() {
		rec := &attemptRecorder{failFirst: 1}
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Routes: `[{match: {prefix: /old}, route: {cluster: up, prefix_rewrite: /new,
				retry_policy: {retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}}}}]`,
			Router: `{upstream_http_filters: ` + upstreamChain(`{
				query_parameter_mutations: [{append: {record: {key: q, value: "1"}, action: OVERWRITE_IF_EXISTS_OR_ADD}}]}`) + `}`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(httpTestUpstream(rec, false))}},
		}.YAML())
		Expect(httpDo(plain, "GET", listenerURL(port, "/old/x?a=b"), nil, nil).Status).To(Equal(200))
		seen := rec.attempts()
		Expect(seen).To(HaveLen(2))
		for i, h := range seen {
			Expect(h.Get("X-Recorded-Path")).To(Equal("/new/x?a=b&q=1"), "attempt %d", i+1)
		}
	})

	It("prefer a cluster's http_filters to the router's, on HTTP/2 too", func() {
		own, other := &attemptRecorder{}, &attemptRecorder{}
		port := freePort()
		Start(newDir(), proxySpec{
			Port:   port,
			HCM:    "{stat_prefix: web}",
			Routes: `[{match: {prefix: /own}, route: {cluster: own}}, {match: {prefix: /}, route: {cluster: other}}]`,
			Router: `{upstream_http_filters: ` + upstreamChain(`{request_mutations: [{append: {header: {key: x-router, value: "1"}}}]}`) + `}`,
			Clusters: []proxyCluster{
				// An HTTP/2 cluster: the chain runs whatever the codec.
				{Name: "own", Port: portNum(httpTestUpstream(own, true)), Extra: httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {}},
					http_filters: ` + upstreamChain(`{request_mutations: [{append: {header: {key: x-cluster, value: "1"}}}]}`) + `}`)},
				{Name: "other", Port: portNum(httpTestUpstream(other, false))},
			},
		}.YAML())
		Expect(httpDo(plain, "GET", listenerURL(port, "/own"), nil, nil).Status).To(Equal(200))
		Expect(httpDo(plain, "GET", listenerURL(port, "/else"), nil, nil).Status).To(Equal(200))
		Expect(own.attempts()).To(HaveLen(1))
		Expect(own.attempts()[0].Get("X-Cluster")).To(Equal("1"))
		Expect(own.attempts()[0].Get("X-Recorded-Proto")).To(Equal("HTTP/2.0"))
		Expect(own.attempts()[0]).NotTo(HaveKey("X-Router"))
		Expect(other.attempts()).To(HaveLen(1))
		Expect(other.attempts()[0].Get("X-Router")).To(Equal("1"))
		Expect(other.attempts()[0]).NotTo(HaveKey("X-Cluster"))
	})

	It("buffer each attempt's request body with an upstream buffer filter, and answer 413 over its limit without an attempt", func() {
		rec := &bodyAttempts{failFirst: 1, shadow: &bodyAttempts{}}
		port := freePort()
		sc := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Routes: `[{match: {prefix: /h2}, route: {cluster: h2, retry_policy: {retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}}}},
				{match: {prefix: /}, route: {cluster: up, request_mirror_policies: [{cluster: shadow}],
				retry_policy: {retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}}}}]`,
			Router: `{upstream_http_filters: [` + bufferFilterYAML(16) + `, ` + upstreamCodec + `]}`,
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(httpTestUpstream(rec, false))},
				{Name: "h2", Port: portNum(httpTestUpstream(rec, true)), Extra: httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {}}}`)},
				// The shadow's own chain: a smaller limit, whose 413
				// drops the copy.
				{Name: "shadow", Port: portNum(httpTestUpstream(rec.shadow, false)), Extra: httpProtocolOptions(`{explicit_http_config: {http_protocol_options: {}},
					http_filters: [` + bufferFilterYAML(12) + `, ` + upstreamCodec + `]}`)},
			},
		}.YAML())
		for _, path := range []string{"/h1", "/h2"} {
			rec.reset(1)
			r := httpDo(plain, "POST", listenerURL(port, path), strings.NewReader("0123456789abcdef"), nil)
			Expect(r.Status).To(Equal(200), path)
			Expect(r.Body).To(Equal("0123456789abcdef"), path)
			// Both attempts got the whole body.
			Expect(rec.got()).To(Equal([]string{"0123456789abcdef", "0123456789abcdef"}), path)

			rec.reset(1)
			r = httpDo(plain, "POST", listenerURL(port, path), strings.NewReader("0123456789abcdefg"), nil)
			Expect(r.Status).To(Equal(413), path)
			Expect(r.Body).To(Equal("Payload Too Large"), path)
			Expect(rec.got()).To(BeEmpty(), path)
		}
		// Under the shadow's limit: the copy goes out (after the one
		// over it, which did not).
		rec.reset(0)
		Expect(httpDo(plain, "POST", listenerURL(port, "/a"), strings.NewReader("0123"), nil).Status).To(Equal(200))
		Eventually(rec.shadow.got, 5*time.Second, 20*time.Millisecond).Should(Equal([]string{"0123"}))
		Expect(statValue(sc, "http.web.downstream_rq_too_large")).To(Equal("0"))
		Expect(statValue(sc, "cluster.up.upstream_rq_retry")).To(Equal("1"))
		Expect(statValue(sc, "cluster.h2.upstream_rq_retry")).To(Equal("1"))
	})

	It("refuse a chain that does not end with upstream_codec, or holds a filter that cannot run upstream, with the path", func() {
		mutation := httpFilter("envoy.filters.http.header_mutation", headerMutationType, `{mutations: {request_mutations: [{remove: x}]}}`)
		rbac := httpFilter("envoy.filters.http.rbac", "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC", `{}`)
		up := portNum(echoHeadersUpstream())
		for chain, want := range map[string]string{
			"[" + mutation + "]":                                "upstream_http_filters[0]: the last upstream HTTP filter must be envoy.filters.http.upstream_codec",
			"[" + upstreamCodec + ", " + mutation + "]":         "upstream_http_filters[0]: upstream_codec is terminal and must be the last upstream filter",
			"[" + rbac + ", " + upstreamCodec + "]":             "upstream_http_filters[0].typed_config: filter \"proxy.filters.http.rbac\" cannot run as an upstream HTTP filter",
			"[" + routerFilterYAML + ", " + upstreamCodec + "]": "upstream_http_filters[0].typed_config: filter \"proxy.filters.http.router\" cannot run as an upstream HTTP filter",
		} {
			r, _ := validate("b.yaml", proxySpec{
				Port: freePort(), HCM: "{stat_prefix: web}",
				Router:   `{upstream_http_filters: ` + chain + `}`,
				Clusters: []proxyCluster{{Name: "up", Port: up}},
			}.YAML())
			Expect(r.ExitCode).To(Equal(1), chain)
			Expect(r.Stderr).To(ContainSubstring(want), chain)
		}
		r, _ := validate("b.yaml", proxySpec{
			Port: freePort(), HCM: "{stat_prefix: web}",
			Clusters: []proxyCluster{{Name: "up", Port: up, Extra: httpProtocolOptions(`{explicit_http_config: {http_protocol_options: {}}, http_filters: [` + mutation + `]}`)}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`http_filters[0]: the last upstream HTTP filter must be envoy.filters.http.upstream_codec`))
		// The codec has no place among the connection manager's filters.
		r, _ = validate("b.yaml", proxySpec{
			Port: freePort(), HCM: "{stat_prefix: web}", Filters: "[" + upstreamCodec + "]",
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`http_filters[0].typed_config: proxy.filters.http.upstream_codec only ends an upstream filter chain`))
	})
})

// routerFilterYAML is the router, a YAML flow mapping for a filter list.
const routerFilterYAML = `{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}`

// bufferFilterYAML is a buffer filter of limit max bytes, a YAML flow
// mapping for a filter list.
func bufferFilterYAML(limit int) string {
	return httpFilter("envoy.filters.http.buffer", "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer", fmt.Sprintf("{max_request_bytes: %d}", limit))
}

// bodyAttempts is an upstream that keeps the body of every request it
// gets, answers the first failFirst of them 503 and echoes the others;
// shadow does the same for a shadow cluster.
type bodyAttempts struct {
	mu        sync.Mutex
	bodies    []string
	failFirst int
	shadow    *bodyAttempts
}

func (b *bodyAttempts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	b.mu.Lock()
	b.bodies = append(b.bodies, string(body))
	fail := len(b.bodies) <= b.failFirst
	b.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write(body)
}

// reset forgets the bodies received, and fails the next failFirst.
func (b *bodyAttempts) reset(failFirst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bodies, b.failFirst = nil, failFirst
}

// got returns the bodies received since the last reset.
func (b *bodyAttempts) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string{}, b.bodies...)
}
