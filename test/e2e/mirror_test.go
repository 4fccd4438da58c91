package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// shadowSeen is one request as a shadow upstream received it.
type shadowSeen struct {
	method, uri, host, body string
	header, trailer         http.Header
}

// shadowRecorder starts an upstream (h2c: HTTP/2 with prior knowledge too)
// that answers status to everything and reports each request on the
// channel it returns.
func shadowRecorder(status int, h2c bool) (string, chan shadowSeen) {
	GinkgoHelper()
	seen := make(chan shadowSeen, 64)
	addr := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case seen <- shadowSeen{r.Method, r.RequestURI, r.Host, string(b), r.Header.Clone(), r.Trailer.Clone()}:
		default:
		}
		w.WriteHeader(status)
		fmt.Fprint(w, "from the shadow")
	}), h2c)
	return addr, seen
}

// mainUpstream answers "main <method> <body length>".
func mainUpstream() string {
	GinkgoHelper()
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "main %s %d", r.Method, len(b))
	}), false)
}

// nextShadow waits (bounded) for the next request a shadow upstream saw.
func nextShadow(seen chan shadowSeen) shadowSeen {
	GinkgoHelper()
	var s shadowSeen
	Eventually(seen, 5*time.Second).Should(Receive(&s))
	return s
}

var _ = Describe("Request mirroring (request_mirror_policies)", func() {
	It("copies requests to the shadow clusters, over HTTP/1.1 and HTTP/2, and the client sees only the main response", func() {
		main := mainUpstream()
		shadow, seen := shadowRecorder(200, false)
		// An HTTP/2 shadow cluster, which answers 500: nobody hears it.
		shadow2, seen2 := shadowRecorder(500, true)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Routes: `[
				{match: {prefix: /mirror}, route: {cluster: main, request_mirror_policies: [
					{cluster: shadow},
					{cluster_header: x-shadow-to, disable_shadow_host_suffix_append: true,
					 request_headers_mutations: [{remove: x-secret}, {append: {header: {key: x-mirrored, value: "%REQ(x-test)%"}}},
					                            {remove_on_match: {key_matcher: {prefix: x-drop-}}}]},
					{cluster: shadow, runtime_fraction: {default_value: {numerator: 0}}}]}},
				{match: {prefix: /off}, route: {cluster: main, request_mirror_policies: [
					{cluster: shadow, runtime_fraction: {default_value: {numerator: 100}, runtime_key: mirror.off}}]}},
				{match: {prefix: /}, route: {cluster: main}}]`,
			VirtualHost: `{request_mirror_policies: [{cluster: shadow2, host_rewrite_literal: rewritten.example}]}`,
			Top:         `{layered_runtime: {layers: [{name: static, static_layer: {mirror.off: 0}}]}}`,
			Clusters: []proxyCluster{
				{Name: "main", Port: portNum(main)},
				{Name: "shadow", Port: portNum(shadow)},
				{Name: "shadow2", Port: portNum(shadow2), Extra: h2cOptions()},
			},
		}.YAML())
		for proto, client := range httpClients() {
			By("mirroring a POST with a body, downstream " + proto)
			req, err := http.NewRequest("POST", listenerURL(port, "/mirror/a?q=1"), strings.NewReader("hello mirror"))
			Expect(err).NotTo(HaveOccurred())
			req.Host = "api.example:8080"
			req.Header.Set("X-Test", "t-"+proto)
			req.Header.Set("X-Secret", "s")
			req.Header.Set("X-Shadow-To", "shadow2")
			req.Header.Set("X-Forwarded-For", "10.9.8.7")
			req.Header.Set("X-Drop-Me", "d")
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(200))
			Expect(string(b)).To(Equal("main POST 12"))

			got := nextShadow(seen)
			Expect(got.method).To(Equal("POST"))
			Expect(got.uri).To(Equal("/mirror/a?q=1"))
			Expect(got.host).To(Equal("api.example-shadow:8080"))
			Expect(got.body).To(Equal("hello mirror"))
			Expect(got.header.Get("X-Test")).To(Equal("t-" + proto))
			Expect(got.header.Get("X-Secret")).To(Equal("s"))
			Expect(got.header.Get("X-Envoy-Internal")).To(Equal("true"))
			// The proxy's address joins the list, after the client's.
			Expect(got.header.Get("X-Forwarded-For")).To(HavePrefix("10.9.8.7, "))
			Expect(got.header.Get("X-Forwarded-For")).NotTo(Equal("10.9.8.7, "))

			got2 := nextShadow(seen2)
			Expect(got2.host).To(Equal("api.example:8080"), "disable_shadow_host_suffix_append")
			Expect(got2.body).To(Equal("hello mirror"))
			Expect(got2.header.Get("X-Secret")).To(BeEmpty(), "request_headers_mutations remove")
			Expect(got2.header.Get("X-Drop-Me")).To(BeEmpty(), "request_headers_mutations remove_on_match")
			Expect(got.header.Get("X-Drop-Me")).To(Equal("d"), "another policy's mutations do not apply")
			Expect(got2.header.Values("X-Mirrored")).To(Equal([]string{"t-" + proto}))

			By("inheriting the virtual host's policy on a route without its own, downstream " + proto)
			r := httpDo(client, "GET", listenerURL(port, "/plain"), nil, nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("main GET 0"))
			got2 = nextShadow(seen2)
			Expect(got2.method).To(Equal("GET"))
			Expect(got2.uri).To(Equal("/plain"))
			Expect(got2.host).To(Equal("rewritten.example"), "host_rewrite_literal")
			Expect(got2.body).To(BeEmpty())

			By("sending no shadow where the runtime key sets the share to 0, downstream " + proto)
			Expect(httpDo(client, "GET", listenerURL(port, "/off"), nil, nil).Status).To(Equal(200))
		}
		// The 0% policies sent nothing: one shadow per mirrored POST.
		Consistently(seen, 300*time.Millisecond).ShouldNot(Receive())
		Consistently(seen2, 100*time.Millisecond).ShouldNot(Receive())

		By("counting the shadows in the shadow clusters' stats only")
		Eventually(func() int64 { return statInt(s, "cluster.shadow2.upstream_rq_completed") }, 5*time.Second).Should(Equal(int64(4)))
		Expect(statInt(s, "cluster.main.upstream_rq_total")).To(Equal(int64(6)))
		Expect(statInt(s, "cluster.main.upstream_rq_200")).To(Equal(int64(6)))
		Expect(statInt(s, "cluster.shadow.upstream_rq_total")).To(Equal(int64(2)))
		Expect(statInt(s, "cluster.shadow.upstream_rq_200")).To(Equal(int64(2)))
		Expect(statInt(s, "cluster.shadow2.upstream_rq_total")).To(Equal(int64(4)))
		Expect(statInt(s, "cluster.shadow2.upstream_rq_500")).To(Equal(int64(4)))
		Expect(statInt(s, "cluster.shadow2.upstream_cx_http2_total")).To(BeNumerically(">=", 1))
		Expect(statInt(s, "http.l.downstream_rq_5xx")).To(BeZero())
	})

	It("never slows or fails the main request: slow, failing, refusing and missing shadow clusters", func() {
		main := mainUpstream()
		release := make(chan struct{})
		entered := make(chan struct{}, 8)
		slow := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}), false)
		// Closed before the handler's server, so that the slow
		// handler does not hold up its server's Close.
		DeferCleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		failing, _ := shadowRecorder(503, false)
		down := freePort() // nothing listens there
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			// A shadow cluster that does not exist passes only
			// without validate_clusters, as in Envoy.
			HCM: `{route_config: {validate_clusters: false}}`,
			Routes: `[{match: {prefix: /}, route: {cluster: main, timeout: 2s, request_mirror_policies: [
				{cluster: slow}, {cluster: failing}, {cluster: down}, {cluster: gone}]}}]`,
			Clusters: []proxyCluster{
				{Name: "main", Port: portNum(main)},
				{Name: "slow", Port: portNum(slow)},
				{Name: "failing", Port: portNum(failing)},
				{Name: "down", Port: down},
			},
		}.YAML())
		for proto, client := range httpClients() {
			By("answering from the main cluster while the slow shadow still waits, downstream " + proto)
			r := httpDo(client, "POST", listenerURL(port, "/x"), strings.NewReader("body"), nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("main POST 4"))
			Eventually(entered, 5*time.Second).Should(Receive())
		}
		By("timing the slow shadow out at the route timeout, counted by its cluster")
		Eventually(func() int64 { return statInt(s, "cluster.slow.upstream_rq_timeout") }, 10*time.Second).Should(Equal(int64(2)))
		Expect(statInt(s, "cluster.slow.upstream_rq_504")).To(Equal(int64(2)))
		Eventually(func() int64 { return statInt(s, "cluster.failing.upstream_rq_503") }, 5*time.Second).Should(Equal(int64(2)))
		Eventually(func() int64 { return statInt(s, "cluster.down.upstream_cx_connect_fail") }, 5*time.Second).Should(Equal(int64(2)))
		Expect(statInt(s, "cluster.down.upstream_rq_503")).To(Equal(int64(2)))
		Expect(statInt(s, "cluster.main.upstream_rq_200")).To(Equal(int64(2)))
		Expect(statInt(s, "cluster.main.upstream_rq_total")).To(Equal(int64(2)))
		Expect(statInt(s, "http.l.downstream_rq_2xx")).To(Equal(int64(2)))
	})

	It("abandons the shadows of a body above the connection buffer limit, counting retry_or_shadow_abandoned", func() {
		main := mainUpstream()
		shadow, seen := shadowRecorder(200, false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{per_connection_buffer_limit_bytes: 4096}`,
			Routes:   `[{match: {prefix: /}, route: {cluster: main, request_mirror_policies: [{cluster: shadow}]}}]`,
			Clusters: []proxyCluster{{Name: "main", Port: portNum(main)}, {Name: "shadow", Port: portNum(shadow)}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		small := strings.Repeat("s", 1000)
		r := httpDo(client, "PUT", listenerURL(port, "/small"), strings.NewReader(small), nil)
		Expect(r.Status).To(Equal(200))
		Expect(nextShadow(seen).body).To(Equal(small))

		big := strings.Repeat("b", 64<<10)
		r = httpDo(client, "PUT", listenerURL(port, "/big"), strings.NewReader(big), nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(fmt.Sprintf("main PUT %d", len(big))))
		Consistently(seen, 300*time.Millisecond).ShouldNot(Receive())
		Expect(statInt(s, "cluster.main.retry_or_shadow_abandoned")).To(Equal(int64(1)))
		Expect(statInt(s, "cluster.shadow.upstream_rq_total")).To(Equal(int64(1)))
	})

	It("gives each copy of a traced request a \"mirror\" child span, sampled as trace_sampled says", func() {
		collector := startZipkinCollector()
		main := mainUpstream()
		shadow, seen := shadowRecorder(200, false)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM: `{tracing: {random_sampling: {value: 100}, provider: {name: envoy.tracers.zipkin, typed_config: {
				"@type": type.googleapis.com/envoy.config.trace.v3.ZipkinConfig,
				collector_cluster: zipkin, collector_endpoint: /api/v2/spans, collector_endpoint_version: HTTP_JSON}}}}`,
			Routes: `[
				{match: {prefix: /inherit}, route: {cluster: main, request_mirror_policies: [{cluster: shadow}]}},
				{match: {prefix: /unsampled}, route: {cluster: main, request_mirror_policies: [{cluster: shadow, trace_sampled: false}]}},
				{match: {prefix: /sampled}, route: {cluster: main, request_mirror_policies: [{cluster: shadow, trace_sampled: true}]}}]`,
			Clusters: []proxyCluster{
				{Name: "main", Port: portNum(main)},
				{Name: "shadow", Port: portNum(shadow)},
				{Name: "zipkin", Port: collector.port},
			},
			Top: `{layered_runtime: {layers: [{name: static, static_layer: {tracing.zipkin.min_flush_spans: 1, tracing.zipkin.flush_interval_ms: 100}}]}}`,
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		const trace = "463ac35c9f6413ad48485a3953bb6124"
		get := func(path, sampled string) shadowSeen {
			r := httpDo(client, "GET", listenerURL(port, path), nil, http.Header{
				"X-B3-Traceid": {trace}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Sampled": {sampled}})
			Expect(r.Status).To(Equal(200))
			return nextShadow(seen)
		}

		By("inheriting the request's sampling")
		got := get("/inherit", "1")
		Expect(got.header.Get("X-B3-Traceid")).To(Equal(trace))
		Expect(got.header.Get("X-B3-Sampled")).To(Equal("1"))
		Eventually(collector.received, 5*time.Second).Should(HaveLen(2))
		mirror := zipkinByName(collector.received(), "mirror")
		Expect(mirror).NotTo(BeNil())
		Expect(mirror.TraceID).To(Equal(trace))
		Expect(mirror.ParentID).To(Equal("a2fb4a1d1a96d312"), "a child of the request's (shared) span")
		Expect(mirror.Kind).To(Equal("CLIENT"))
		Expect(got.header.Get("X-B3-Spanid")).To(Equal(mirror.ID))
		Expect(mirror.Tags).To(HaveKeyWithValue("upstream_cluster", "shadow"))
		Expect(mirror.Tags).To(HaveKeyWithValue("http.status_code", "200"))

		By("not sampling the copy with trace_sampled: false")
		got = get("/unsampled", "1")
		Expect(got.header.Get("X-B3-Sampled")).To(Equal("0"))
		Eventually(collector.received, 5*time.Second).Should(HaveLen(3))

		By("sampling the copy of an unsampled request with trace_sampled: true")
		got = get("/sampled", "0")
		Expect(got.header.Get("X-B3-Sampled")).To(Equal("1"))
		Eventually(collector.received, 5*time.Second).Should(HaveLen(4))
		Consistently(collector.received, 300*time.Millisecond).Should(HaveLen(4))
		var mirrors int
		for _, sp := range collector.received() {
			if sp.Name == "mirror" {
				mirrors++
			}
		}
		Expect(mirrors).To(Equal(2), "the inherited and the trace_sampled: true copies")
	})

	It("refuses bad mirror policies with their field paths", func() {
		cfg := func(policies string) string {
			return proxySpec{
				Port:     freePort(),
				Routes:   `[{match: {prefix: /}, route: {cluster: main, request_mirror_policies: ` + policies + `}}]`,
				Clusters: []proxyCluster{{Name: "main", Port: freePort()}},
			}.YAML()
		}
		const route = "route_config.virtual_hosts[0].routes[0].route.request_mirror_policies"
		for policies, want := range map[string]string{
			`[{cluster: main, cluster_header: x}]`: route + `[0].cluster: only one of cluster "main" or cluster_header "x" in request mirror policy can be specified`,
			`[{cluster: main}, {}]`:                route + "[1].cluster: exactly one of cluster or cluster_header in request mirror policy need to be specified",
			`[{cluster: nowhere}]`:                 route + "[0].cluster: unknown shadow cluster 'nowhere'",
			`[{cluster: main, request_headers_mutations: [{remove_on_match: {key_matcher: {safe_regex: {regex: "("}}}}]}]`: route + "[0].request_headers_mutations[0].remove_on_match.key_matcher.safe_regex.regex: error parsing regexp",
			`[{cluster: main, request_headers_mutations: [{append: {header: {key: host, value: h}}}]}]`:                    route + `[0].request_headers_mutations[0].append.header.key: "host" cannot be modified`,
		} {
			r, _ := validate("mirror.yaml", cfg(policies))
			Expect(r.ExitCode).To(Equal(1), policies)
			Expect(r.Stderr).To(ContainSubstring(want), policies)
		}
	})
})
