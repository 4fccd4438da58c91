package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// routingBootstrap is a listener whose route table exercises virtual host
// selection, the path, header and query matchers, redirects and header
// mutations at the three levels, with two listener access logs (text and
// JSON) in dir.
func routingBootstrap(port int, dir string) string {
	return fmt.Sprintf(`
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: routing
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: routing
          access_log:
          - name: envoy.access_loggers.file
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: %q
              log_format:
                text_format_source:
                  inline_string: "%%REQ(:METHOD)%% %%REQ(:PATH)%% %%RESPONSE_CODE%% %%RESPONSE_FLAGS%% route=%%ROUTE_NAME%% host=%%REQ(:AUTHORITY)%% ua=%%REQ(USER-AGENT):8%%\n"
          - name: envoy.access_loggers.file
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: %q
              log_format:
                json_format: {code: "%%RESPONSE_CODE%%", route: "%%ROUTE_NAME%%", upstream: "%%UPSTREAM_HOST%%", path: "%%REQ(:PATH)%%"}
                omit_empty_values: true
          route_config:
            name: routing
            response_headers_to_add:
            - {header: {key: x-level, value: config}}
            - {header: {key: x-winner, value: config}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
            virtual_hosts:
            - name: api
              domains: [api.example.com, "api.example.com:8080"]
              response_headers_to_add:
              - {header: {key: x-level, value: vhost}}
              - {header: {key: x-winner, value: vhost}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
              routes:
              - name: health
                match: {path: /health}
                direct_response: {status: 200, body: {inline_string: api-health}}
              - name: canary
                match: {prefix: /items, headers: [{name: x-canary, string_match: {exact: "YES", ignore_case: true}}]}
                direct_response: {status: 200, body: {inline_string: canary}}
              - name: debug
                match: {prefix: /items, query_parameters: [{name: debug, present_match: true}]}
                direct_response: {status: 200, body: {inline_string: debug}}
              - name: item
                match: {safe_regex: {regex: "/items/[0-9]+"}}
                direct_response: {status: 200, body: {inline_string: item}}
                response_headers_to_add:
                - {header: {key: x-level, value: route}}
                - {header: {key: x-winner, value: route}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
                - {header: {key: x-client, value: "%%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%%"}}
              - name: docs
                match: {path_separated_prefix: /Docs, case_sensitive: false}
                direct_response: {status: 200, body: {inline_string: docs}}
            - name: wildcard
              domains: ["*.example.com"]
              routes:
              - name: to-https
                match: {prefix: /secure}
                redirect: {https_redirect: true, strip_query: true}
              - name: moved
                match: {prefix: /old/}
                redirect: {prefix_rewrite: /new/, response_code: TEMPORARY_REDIRECT}
              - name: wildcard
                match: {prefix: /}
                direct_response: {status: 200, body: {inline_string: wildcard}}
            - name: default
              domains: ["*"]
              routes:
              - name: default
                match: {prefix: /}
                direct_response: {status: 200, body: {inline_string: default}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, port, filepath.Join(dir, "access.log"), filepath.Join(dir, "access.json"))
}

// routeClient does not follow redirects, so that specs see them.
var routeClient = &http.Client{
	Timeout:       5 * time.Second,
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// routeGet sends GET path to the listener with the given Host header.
func routeGet(port int, host, path string, header http.Header) Response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, listenerURL(port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	req.Host = host
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := routeClient.Do(req)
	Expect(err).NotTo(HaveOccurred(), "GET %s (Host %s)", path, host)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return Response{Status: resp.StatusCode, Body: string(b), Header: resp.Header}
}

var _ = Describe("Routing", func() {
	var (
		port int
		dir  string
	)

	BeforeEach(func() {
		dir = newDir()
		port = freePort()
		Start(dir, routingBootstrap(port, dir), "--file-flush-interval-msec", "50")
	})

	DescribeTable("picks the virtual host by domain, then the first matching route",
		func(host, path string, header http.Header, want string) {
			r := routeGet(port, host, path, header)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal(want))
		},
		Entry("exact domain, exact path", "api.example.com", "/health", nil, "api-health"),
		Entry("domains are case-insensitive", "API.Example.com", "/health?x=1", nil, "api-health"),
		Entry("a port is matched as written", "api.example.com:8080", "/health", nil, "api-health"),
		Entry("an unlisted port falls to the catch-all", "api.example.com:9090", "/health", nil, "default"),
		Entry("suffix wildcard", "www.example.com", "/anything", nil, "wildcard"),
		Entry("catch-all", "other.test", "/health", nil, "default"),
		Entry("header matcher, ignoring case", "api.example.com", "/items/7", http.Header{"X-Canary": {"yes"}}, "canary"),
		Entry("query parameter matcher", "api.example.com", "/items?debug", nil, "debug"),
		Entry("regex matcher", "api.example.com", "/items/42", nil, "item"),
		Entry("case-insensitive separated prefix", "api.example.com", "/docs/intro", nil, "docs"),
	)

	It("answers 404 when no route of the virtual host matches", func() {
		Expect(routeGet(port, "api.example.com", "/nothing", nil).Status).To(Equal(404))
		Expect(routeGet(port, "api.example.com", "/docsearch", nil).Status).To(Equal(404))
	})

	It("redirects with the configured code and a rebuilt location", func() {
		r := routeGet(port, "www.example.com", "/secure/page?token=1", nil)
		Expect(r.Status).To(Equal(301))
		Expect(r.Header.Get("Location")).To(Equal("https://www.example.com/secure/page"))

		r = routeGet(port, "www.example.com", "/old/a?b=1", nil)
		Expect(r.Status).To(Equal(307))
		Expect(r.Header.Get("Location")).To(Equal("http://www.example.com/new/a?b=1"))
	})

	It("adds response headers at the three levels, the most general last", func() {
		r := routeGet(port, "api.example.com", "/items/1", nil)
		Expect(r.Header.Values("X-Level")).To(Equal([]string{"route", "vhost", "config"}))
		Expect(r.Header.Values("X-Winner")).To(Equal([]string{"config"}))
		Expect(r.Header.Get("X-Client")).To(Equal("127.0.0.1"))
	})

	It("writes the listener access logs in the configured text and JSON formats", func() {
		routeGet(port, "api.example.com", "/health", http.Header{"User-Agent": {"routing-e2e/1.0"}})
		routeGet(port, "api.example.com", "/nothing", http.Header{"User-Agent": {"routing-e2e/1.0"}})
		// The two requests may be served by different workers, and a line is
		// written once its response has gone, so the order of the lines is
		// not the order of the requests.
		Eventually(func() []string {
			return strings.Split(readFile(filepath.Join(dir, "access.log")), "\n")
		}).Should(ConsistOf(
			"GET /health 200 - route=health host=api.example.com ua=routing-",
			"GET /nothing 404 NR route=- host=api.example.com ua=routing-",
			"")) // what follows the last line's newline
		var lines []map[string]any
		Eventually(func() int {
			lines = nil
			for _, l := range strings.Split(strings.TrimSpace(readFile(filepath.Join(dir, "access.json"))), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil {
					lines = append(lines, m)
				}
			}
			return len(lines)
		}).Should(Equal(2))
		Expect(lines).To(ConsistOf(
			map[string]any{"code": 200.0, "route": "health", "path": "/health"},
			map[string]any{"code": 404.0, "path": "/nothing"}))
	})
})

var _ = Describe("Routing configuration errors", func() {
	It("names the field path of a bad route and exits 1 in validate mode", func() {
		dir := newDir()
		cfg := strings.Replace(routingBootstrap(freePort(), dir), `regex: "/items/[0-9]+"`, `regex: "/items/[0-9+"`, 1)
		path := filepath.Join(dir, "bad.yaml")
		writeFile(path, cfg)
		res := Run("--mode", "validate", "-c", path)
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(
			"route_config.virtual_hosts[0].routes[3].match.safe_regex.regex: error parsing regexp: missing closing ]"))
	})
})
