package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Route actions: cluster_header and bodies from files", func() {
	It("sends each request to the cluster its header names, and answers direct responses with a file's body", func() {
		named := func(name string) string {
			return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, "from "+name)
			}), false)
		}
		a, b := named("a"), named("b")
		dir := newDir()
		body := filepath.Join(dir, "maintenance.html")
		writeFile(body, "<h1>back soon</h1>\n")
		port := freePort()
		cluster := func(name, addr string) string {
			host, p, _ := strings.Cut(addr, ":")
			return fmt.Sprintf("  - {name: %s, type: STATIC, connect_timeout: 1s, load_assignment: {cluster_name: %s, "+
				"endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %s}}}}]}]}}\n", name, name, host, p)
		}
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: actions
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /pick}
                route: {cluster_header: X-Cluster, cluster_not_found_response_code: NOT_FOUND}
              - match: {prefix: /maintenance}
                direct_response: {status: 503, body: {filename: %s}}
          http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
  clusters:
%s%s`, port, body, cluster("a", a), cluster("b", b))
		Start(dir, cfg)
		client := &http.Client{Timeout: 5 * time.Second}
		for _, name := range []string{"a", "b", "a"} {
			r := httpDo(client, "GET", listenerURL(port, "/pick"), nil, http.Header{"X-Cluster": {name}})
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("from " + name))
		}
		// A header naming no cluster, or none at all: the route's
		// cluster_not_found_response_code.
		Expect(httpDo(client, "GET", listenerURL(port, "/pick"), nil, http.Header{"X-Cluster": {"c"}}).Status).To(Equal(404))
		Expect(httpDo(client, "GET", listenerURL(port, "/pick"), nil, nil).Status).To(Equal(404))

		r := httpDo(client, "GET", listenerURL(port, "/maintenance"), nil, nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("<h1>back soon</h1>\n"))
		// Read once, at load: a later change does not show.
		writeFile(body, "changed")
		Expect(httpDo(client, "GET", listenerURL(port, "/maintenance"), nil, nil).Body).To(Equal("<h1>back soon</h1>\n"))

		By("refusing a body file that cannot be read, with its path")
		r2, _ := validate("bad.yaml", strings.Replace(cfg, body, filepath.Join(dir, "missing.html"), 1))
		Expect(r2.ExitCode).To(Equal(1))
		Expect(r2.Stderr).To(ContainSubstring("routes[1].direct_response.body.filename: open " + filepath.Join(dir, "missing.html")))
	})
})
