package e2e

import (
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Route configuration options: vhost_header, ignore_path_parameters_in_path_matching, direct response body_format, format rewrites", func() {
	It("picks the virtual host by another header, matches paths without their parameters, and formats direct responses", func() {
		echo := portNum(httpTestUpstream(http.HandlerFunc(httpEcho), false))
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{route_config: {vhost_header: x-tenant, ignore_path_parameters_in_path_matching: true}}`,
			Hosts: `[{name: blue, domains: [blue.tenant], routes: [
				{match: {path: /api/v1}, route: {cluster: echo, hedge_policy: {initial_requests: 1, additional_request_chance: {numerator: 0}}}},
				{match: {path: /local}, non_forwarding_action: {}},
				{match: {prefix: /}, direct_response: {status: 404, body: {inline_string: "no such page"},
					body_format: {json_format: {error: "%LOCAL_REPLY_BODY%", path: "%REQ(:PATH)%", tenant: "%REQ(X-TENANT)%"}}}}]}]`,
			Routes:   `[{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: "catch-all"}, body_format: {text_format: "<p>%LOCAL_REPLY_BODY%</p>", content_type: "text/html; charset=utf-8"}}}]`,
			Clusters: []proxyCluster{{Name: "echo", Port: echo}},
		}.YAML())
		get := func(path, tenant string) (int, string, string) {
			GinkgoHelper()
			req, err := http.NewRequest("GET", listenerURL(port, path), nil)
			Expect(err).NotTo(HaveOccurred())
			req.Host = "blue.tenant" // never read: vhost_header picks the virtual host
			if tenant != "" {
				req.Header.Set("X-Tenant", tenant)
			}
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
		}

		code, _, body := get("/api/v1;jsessionid=42?x=1", "Blue.Tenant")
		Expect(code).To(Equal(200))
		Expect(body).To(HavePrefix("GET /api/v1;jsessionid=42?x=1 HTTP/1.1\n"), "the parameters still go upstream")

		code, ct, body := get("/api/v2", "blue.tenant")
		Expect(code).To(Equal(404))
		Expect(ct).To(Equal("application/json"))
		Expect(body).To(MatchJSON(`{"error": "no such page", "path": "/api/v2", "tenant": "blue.tenant"}`))

		code, ct, body = get("/api/v1", "red.tenant")
		Expect(code).To(Equal(200))
		Expect(ct).To(Equal("text/html; charset=utf-8"))
		Expect(body).To(Equal("<p>catch-all</p>"))

		// Nothing answered the non-forwarding route before the router.
		code, _, body = get("/local", "blue.tenant")
		Expect(code).To(Equal(503))
		Expect(body).To(BeEmpty())

		// Without the header there is no virtual host.
		code, _, _ = get("/api/v1", "")
		Expect(code).To(Equal(404))
	})

	It("rewrites paths and hosts with format strings, after the route's header edits, and redirects to a formatted path", func() {
		echo := portNum(httpTestUpstream(http.HandlerFunc(httpEcho), false))
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /api/}, request_headers_to_add: [{header: {key: x-version, value: "v%REQ(x-major)%"}}],
					route: {cluster: echo, path_rewrite: "/%REQ(x-version)%/items", host_rewrite: "svc-%REQ(x-tenant)%.internal"}},
				{match: {prefix: /old/}, redirect: {path_rewrite: "/new/%REQ(x-major)%", response_code: FOUND}}]`,
			Clusters: []proxyCluster{{Name: "echo", Port: echo}},
		}.YAML())
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		get := func(path string) *http.Response {
			GinkgoHelper()
			req, err := http.NewRequest("GET", listenerURL(port, path), nil)
			Expect(err).NotTo(HaveOccurred())
			req.Host = "shop.example"
			req.Header.Set("X-Major", "3")
			req.Header.Set("X-Tenant", "blue")
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(resp.Body.Close)
			return resp
		}

		resp := get("/api/anything?q=1")
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(HavePrefix("GET /v3/items?q=1 HTTP/1.1\nhost: svc-blue.internal\n"), "x-version is the route's own header, added first")
		Expect(string(b)).To(ContainSubstring("x-envoy-original-path: /api/anything?q=1\n"))

		resp = get("/old/page?z=9")
		Expect(resp.StatusCode).To(Equal(302))
		Expect(resp.Header.Get("Location")).To(Equal("http://shop.example/new/3?z=9"))
	})
})
