package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// httpProxyBootstrap is a listener with the health_check filter on /healthz,
// a text access log in dir, and routes to real upstreams:
//
//	/rewrite/... -> echo, with prefix and host rewrites
//	/slow        -> slow, with a 200 ms route timeout
//	/weighted    -> wa (weight 3) or wb (weight 1)
//	/h2/...      -> echo2, an h2c upstream
//	/            -> echo
func httpProxyBootstrap(port int, dir string, echo, slow, wa, wb, echo2 string) string {
	GinkgoHelper()
	return proxySpec{
		Port:     port,
		Listener: "{name: http}",
		// The specs name their requests by x-request-id, which an edge
		// proxy would otherwise replace: preserve_external_request_id.
		HCM: `{stat_prefix: edge, codec_type: AUTO, use_remote_address: true, preserve_external_request_id: true, via: "1.1 outrigger-e2e",
			access_log: [` + fileLog(filepath.Join(dir, "access.log"),
			"%PROTOCOL% %REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %UPSTREAM_CLUSTER% %ROUTE_NAME% %REQ(X-REQUEST-ID)%\n") + `]}`,
		Routes: `[{name: rewrite, match: {prefix: /rewrite/}, route: {cluster: echo, prefix_rewrite: /, host_rewrite_literal: rewritten.example}},
			{name: slow, match: {path: /slow}, route: {cluster: slow, timeout: 0.2s}},
			{name: weighted, match: {path: /weighted}, route: {weighted_clusters: {clusters: [{name: wa, weight: 3}, {name: wb, weight: 1}]}}},
			{name: h2, match: {prefix: /h2/}, route: {cluster: echo2}},
			{name: default, match: {prefix: /}, route: {cluster: echo}}]`,
		Filters: "[" + httpFilter("envoy.filters.http.health_check", "type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck",
			`{pass_through_mode: false, headers: [{name: ":path", string_match: {exact: /healthz}}]}`) + "]",
		Clusters: []proxyCluster{
			{Name: "echo", Port: portNum(echo)}, {Name: "slow", Port: portNum(slow)},
			{Name: "wa", Port: portNum(wa)}, {Name: "wb", Port: portNum(wb)},
			{Name: "echo2", Port: portNum(echo2), Extra: h2cOptions()},
		},
	}.YAML()
}

// httpEcho answers with the request as the upstream saw it: the request
// line, then "name: value" lines for the headers this suite looks at.
func httpEcho(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	fmt.Fprintf(w, "%s %s %s\nhost: %s\n", r.Method, r.RequestURI, r.Proto, r.Host)
	for _, k := range []string{"X-Envoy-Original-Path", "X-Forwarded-For", "X-Forwarded-Proto", "X-Request-Id", "Via", "X-Envoy-External-Address", "X-Envoy-Retry-On"} {
		if v := r.Header.Get(k); v != "" {
			fmt.Fprintf(w, "%s: %s\n", strings.ToLower(k), v)
		}
	}
}

// httpTestUpstream starts an upstream on loopback; h2c adds HTTP/2 with
// prior knowledge.
func httpTestUpstream(h http.Handler, h2c bool) string {
	GinkgoHelper()
	srv := httptest.NewUnstartedServer(h)
	if h2c {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	DeferCleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// httpStat reads one stat from the admin interface, "" when absent.
func httpStat(s *Sidecar, name string) string {
	GinkgoHelper()
	r := s.Get("/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(name)+"$"))
	Expect(r.Status).To(Equal(http.StatusOK))
	for _, line := range strings.Split(r.Body, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return v
		}
	}
	return ""
}

// httpClients are the two downstream protocols every spec runs over.
func httpClients() map[string]*http.Client {
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	return map[string]*http.Client{
		"HTTP/1.1": {Timeout: 5 * time.Second, Transport: &http.Transport{}},
		"HTTP/2":   {Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: h2c}},
	}
}

var _ = Describe("HTTP connection manager", func() {
	var (
		sc      *Sidecar
		port    int
		dir     string
		release chan struct{}
	)

	BeforeEach(func() {
		dir = newDir()
		port = freePort()
		release = make(chan struct{})
		DeferCleanup(func() { close(release) })
		echo := httpTestUpstream(http.HandlerFunc(httpEcho), false)
		slow := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Longer than the route's 200 ms timeout; bounded so that a
			// failing spec does not hang.
			select {
			case <-release:
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}), false)
		named := func(name string) string {
			return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, name)
			}), false)
		}
		echo2 := httpTestUpstream(http.HandlerFunc(httpEcho), true)
		sc = Start(dir, httpProxyBootstrap(port, dir, echo, slow, named("wa"), named("wb"), echo2),
			"--file-flush-interval-msec", "20")
	})

	do := func(c *http.Client, method, path string, header http.Header) Response {
		GinkgoHelper()
		return httpDo(c, method, listenerURL(port, path), nil, header)
	}

	for proto, client := range httpClients() {
		Context("over "+proto, func() {
			It("proxies with prefix and host rewrites and the connection manager's headers", func() {
				r := do(client, http.MethodGet, "/rewrite/a/b?c=d", http.Header{"X-Request-Id": {"e2e-1"}, "X-Envoy-Retry-On": {"5xx"}})
				Expect(r.Status).To(Equal(http.StatusOK))
				Expect(r.Body).To(HavePrefix("GET /a/b?c=d HTTP/1.1\nhost: rewritten.example\n"))
				Expect(r.Body).To(ContainSubstring("x-envoy-original-path: /rewrite/a/b?c=d\n"))
				Expect(r.Body).To(ContainSubstring("x-forwarded-for: 127.0.0.1\n"))
				Expect(r.Body).To(ContainSubstring("x-forwarded-proto: http\n"))
				Expect(r.Body).To(ContainSubstring("x-request-id: e2e-1\n"))
				Expect(r.Body).To(ContainSubstring("via: 1.1 outrigger-e2e\n"))
				// An edge request: the client's address is named, and what
				// only a trusted hop may ask for is dropped.
				Expect(r.Body).To(ContainSubstring("x-envoy-external-address: 127.0.0.1\n"))
				Expect(r.Body).NotTo(ContainSubstring("x-envoy-retry-on"))
				Expect(r.Header.Get("Server")).To(Equal("outrigger"))
				Expect(r.Header.Get("Via")).To(Equal("1.1 outrigger-e2e"))
				Expect(r.Header.Get("X-Envoy-Upstream-Service-Time")).NotTo(BeEmpty())
			})

			It("generates an x-request-id when the client sends none", func() {
				r := do(client, http.MethodGet, "/anything", nil)
				Expect(r.Body).To(MatchRegexp(`x-request-id: [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n`))
			})

			It("reaches an HTTP/2 upstream", func() {
				r := do(client, http.MethodPost, "/h2/x", nil)
				Expect(r.Status).To(Equal(http.StatusOK))
				Expect(r.Body).To(HavePrefix("POST /h2/x HTTP/2.0\n"))
			})

			It("spreads weighted clusters by weight", func() {
				counts := map[string]int{}
				const n = 400
				for range n {
					r := do(client, http.MethodGet, "/weighted", nil)
					Expect(r.Status).To(Equal(http.StatusOK))
					counts[r.Body]++
				}
				Expect(counts["wa"] + counts["wb"]).To(Equal(n))
				// 3:1 expects 300 and 100; the bounds are seven standard
				// deviations wide, so chance alone never trips them.
				Expect(counts["wa"]).To(BeNumerically("~", 300, 60))
			})

			It("answers 504 with UT when the route timeout fires", func() {
				r := do(client, http.MethodGet, "/slow", http.Header{"X-Request-Id": {"slow-1"}})
				Expect(r.Status).To(Equal(http.StatusGatewayTimeout))
				Expect(r.Body).To(Equal("upstream request timeout"))
				Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).
					Should(ContainSubstring(" GET /slow 504 UT slow slow slow-1\n"))
				Eventually(func() string { return httpStat(sc, "cluster.slow.upstream_rq_timeout") }).ShouldNot(Equal("0"))
			})

			It("writes access-log lines", func() {
				do(client, http.MethodGet, "/rewrite/logged", http.Header{"X-Request-Id": {"log-1"}})
				do(client, http.MethodGet, "/healthz", http.Header{"X-Request-Id": {"log-2"}})
				wantProto := proto
				Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).Should(And(
					ContainSubstring(wantProto+" GET /rewrite/logged 200 - echo rewrite log-1\n"),
					ContainSubstring(wantProto+" GET /healthz 200 - - - log-2\n"),
				))
			})

			It("answers health checks from the server's state", func() {
				Expect(do(client, http.MethodGet, "/healthz", nil).Status).To(Equal(http.StatusOK))
				Expect(sc.Post("/healthcheck/fail").Status).To(Equal(http.StatusOK))
				r := do(client, http.MethodGet, "/healthz", nil)
				Expect(r.Status).To(Equal(http.StatusServiceUnavailable))
				// Other requests still reach the upstreams.
				Expect(do(client, http.MethodGet, "/other", nil).Status).To(Equal(http.StatusOK))
				Expect(sc.Post("/healthcheck/ok").Status).To(Equal(http.StatusOK))
				Expect(do(client, http.MethodGet, "/healthz", nil).Status).To(Equal(http.StatusOK))
				Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).
					Should(ContainSubstring(" GET /healthz 503 LH - - "))
			})
		})
	}

	It("counts requests per protocol with Envoy's stat names", func() {
		for _, c := range httpClients() {
			do(c, http.MethodGet, "/counted", nil)
		}
		Eventually(func() string { return httpStat(sc, "http.edge.downstream_rq_http1_total") }).Should(Equal("1"))
		Eventually(func() string { return httpStat(sc, "http.edge.downstream_rq_http2_total") }).Should(Equal("1"))
		Eventually(func() string { return httpStat(sc, "http.edge.downstream_rq_2xx") }).Should(Equal("2"))
		Eventually(func() string { return httpStat(sc, "cluster.echo.upstream_rq_200") }).Should(Equal("2"))
	})
})
