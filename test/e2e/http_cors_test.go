package e2e

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// corsBootstrap is a listener on port with the CORS filter, routing to
// the upstream at up: a virtual host policy, a route with a stricter one
// (/strict), a route whose policy comes from typed_per_filter_config
// (/per-route), and a route in shadow mode (/shadow).
func corsBootstrap(port int, up string) string {
	return corsSpec(port, up, "", `{envoy.filters.http.cors: `+corsPerRoute()+`}`)
}

// corsPerRoute is the CORS policy of /per-route.
func corsPerRoute() string {
	GinkgoHelper()
	return withType("type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy",
		`{allow_origin_string_match: [{prefix: "https://"}], allow_methods: "*", allow_private_network_access: true}`)
}

// corsSpec is corsBootstrap with origins (YAML flow list items, "" for
// none) before the virtual host's allowed origins and /per-route's
// typed_per_filter_config perRoute (a YAML flow mapping), for the specs
// that refuse configurations.
func corsSpec(port int, up, origins, perRoute string) string {
	GinkgoHelper()
	if origins != "" {
		origins += ", "
	}
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: web}",
		VirtualHost: `{cors: {
			allow_origin_string_match: [` + origins + `{exact: https://app.example}, {safe_regex: {regex: 'https://[a-z]+\.trusted\.example'}}],
			allow_methods: "GET, PUT, DELETE", allow_headers: "authorization, content-type", expose_headers: x-request-id,
			max_age: "600", allow_credentials: true}}`,
		Routes: `[{match: {prefix: /strict}, route: {cluster: up,
				cors: {allow_origin_string_match: [{exact: https://admin.example}], forward_not_matching_preflights: false}}},
			{match: {prefix: /per-route}, route: {cluster: up}, typed_per_filter_config: ` + perRoute + `},
			{match: {prefix: /shadow}, route: {cluster: up,
				cors: {filter_enabled: {default_value: {numerator: 0}}, shadow_enabled: {default_value: {numerator: 100}}}}},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters:  "[" + httpFilter("envoy.filters.http.cors", "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors", "") + "]",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
	}.YAML()
}

// curl runs curl with args and returns its output; curl is a real
// browser-less client whose requests no Go code shaped.
func curl(args ...string) string {
	GinkgoHelper()
	out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "10"}, args...)...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "curl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

var _ = Describe("The CORS filter", func() {
	var (
		sc    *Sidecar
		port  int
		hits  atomic.Int64
		plain = &http.Client{Timeout: 5 * time.Second}
	)

	BeforeEach(func() {
		hits.Store(0)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("x-upstream", "yes")
			_, _ = io.WriteString(w, r.Method+" "+r.URL.Path)
		}), false)
		port = freePort()
		sc = Start(newDir(), corsBootstrap(port, up))
	})

	get := func(method, path string, header ...string) Response {
		GinkgoHelper()
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Add(header[i], header[i+1])
		}
		return httpDo(plain, method, listenerURL(port, path), nil, h)
	}

	It("answers an allowed preflight itself, with the policy's headers", func() {
		out := curl("-i", "-X", "OPTIONS", listenerURL(port, "/api"),
			"-H", "Origin: https://app.example", "-H", "Access-Control-Request-Method: PUT",
			"-H", "Access-Control-Request-Headers: authorization")
		Expect(out).To(HavePrefix("HTTP/1.1 200 OK"))
		lower := strings.ToLower(out)
		Expect(lower).To(ContainSubstring("access-control-allow-origin: https://app.example\r\n"))
		Expect(lower).To(ContainSubstring("access-control-allow-methods: get, put, delete\r\n"))
		Expect(lower).To(ContainSubstring("access-control-allow-headers: authorization, content-type\r\n"))
		Expect(lower).To(ContainSubstring("access-control-max-age: 600\r\n"))
		Expect(lower).To(ContainSubstring("access-control-allow-credentials: true\r\n"))
		Expect(lower).NotTo(ContainSubstring("x-upstream"))
		Expect(hits.Load()).To(BeZero(), "the preflight reached the upstream")
		Expect(httpStat(sc, "http.web.cors.origin_valid")).To(Equal("1"))
	})

	It("adds the CORS headers to the upstream's response for an allowed origin, and none for others", func() {
		r := get("GET", "/api", "Origin", "https://shop.trusted.example")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("x-upstream")).To(Equal("yes"))
		Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("https://shop.trusted.example"))
		Expect(r.Header.Get("Access-Control-Allow-Credentials")).To(Equal("true"))
		Expect(r.Header.Get("Access-Control-Expose-Headers")).To(Equal("x-request-id"))

		r = get("GET", "/api", "Origin", "https://evil.example")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Origin"))

		r = get("GET", "/api")
		Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Origin"))
		Expect(httpStat(sc, "http.web.cors.origin_valid")).To(Equal("1"))
		Expect(httpStat(sc, "http.web.cors.origin_invalid")).To(Equal("1"))
	})

	It("forwards a preflight from an origin it does not allow, unless the policy says not to", func() {
		r := get("OPTIONS", "/api", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET")
		Expect(r.Header.Get("x-upstream")).To(Equal("yes"))
		Expect(r.Body).To(Equal("OPTIONS /api"))

		r = get("OPTIONS", "/strict", "Origin", "https://app.example", "Access-Control-Request-Method", "GET")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header).NotTo(HaveKey("X-Upstream"))
		Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Origin"))
		// The route's policy names its own origins; the rest comes from
		// the virtual host's.
		r = get("OPTIONS", "/strict", "Origin", "https://admin.example", "Access-Control-Request-Method", "GET")
		Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("https://admin.example"))
		Expect(r.Header.Get("Access-Control-Allow-Methods")).To(Equal("GET, PUT, DELETE"))
	})

	It("uses a per-route CorsPolicy from typed_per_filter_config in place of the route's", func() {
		r := get("OPTIONS", "/per-route", "Origin", "https://anything.example", "Access-Control-Request-Method", "PATCH",
			"Access-Control-Request-Private-Network", "true")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("https://anything.example"))
		Expect(r.Header.Get("Access-Control-Allow-Methods")).To(Equal("PATCH"))
		Expect(r.Header.Get("Access-Control-Allow-Private-Network")).To(Equal("true"))
		// The virtual host's cors is not merged in: no credentials.
		Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Credentials"))
		Expect(hits.Load()).To(BeZero())
	})

	It("only counts in shadow mode", func() {
		r := get("OPTIONS", "/shadow", "Origin", "https://app.example", "Access-Control-Request-Method", "GET")
		Expect(r.Header.Get("x-upstream")).To(Equal("yes"))
		Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Origin"))
		Expect(httpStat(sc, "http.web.cors.origin_valid")).To(Equal("1"))
	})

	It("serves preflights over HTTP/2 too", func() {
		r := httpDo(httpClients()["HTTP/2"], "OPTIONS", listenerURL(port, "/api"), nil,
			http.Header{"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"DELETE"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("https://app.example"))
		sc.Signal(syscall.SIGINT)
		Expect(sc.Wait(stopTimeout)).To(Equal(0))
	})
})

var _ = Describe("CORS configuration", func() {
	It("refuses what it does not implement, with the field path", func() {
		cfg := corsSpec(freePort(), "127.0.0.1:1", `{custom: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}`,
			`{envoy.filters.http.cors: `+corsPerRoute()+`}`)
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("route_config.virtual_hosts[0].cors.allow_origin_string_match[0].custom"))
	})

	It("refuses a per-route configuration of a filter that takes none, and ignores an optional unknown one", func() {
		bad := corsSpec(freePort(), "127.0.0.1:1", "",
			`{envoy.filters.http.cors: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}`)
		r, _ := validate("b.yaml", bad)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`routes[1].typed_per_filter_config["envoy.filters.http.cors"]: the filter proxy.filters.http.router takes no per-route configuration`))

		optional := corsSpec(freePort(), "127.0.0.1:1", "", `{envoy.filters.http.unknown: {"@type": type.googleapis.com/envoy.config.route.v3.FilterConfig,
			is_optional: true, config: {"@type": type.googleapis.com/google.protobuf.Empty}},
			envoy.filters.http.cors: `+corsPerRoute()+`}`)
		r, _ = validate("b.yaml", optional)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})
