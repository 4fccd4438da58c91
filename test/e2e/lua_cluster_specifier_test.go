package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// luaClusterSpecifierType is the Lua cluster specifier plugin's config.
const luaClusterSpecifierType = "type.googleapis.com/envoy.extensions.router.cluster_specifiers.lua.v3.LuaConfig"

// luaPickerConfig is the sandbox's shape with two real upstreams: an
// inline Lua plugin on / reads header_key (blue_cluster, green_cluster,
// a cluster that does not exist, an error, nothing, a number) with
// default_cluster green_cluster; /named uses a named plugin of the route
// configuration that reads x-color; /optional names an optional matcher
// plugin that picks blue_cluster on x-color: blue.
func luaPickerConfig(port int, green, blue string) string {
	return fmt.Sprintf(`
static_resources:
  listeners:
  - address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress_http
          codec_type: AUTO
          route_config:
            name: picker_route
            cluster_specifier_plugins:
            - extension:
                name: by_color
                typed_config:
                  "@type": %[4]s
                  source_code:
                    inline_string: |
                      function envoy_on_route(route_handle)
                        return route_handle:headers():get("x-color") .. "_cluster"
                      end
                  default_cluster: green_cluster
            - extension:
                name: not_in_outrigger
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.MatcherClusterSpecifier
                  cluster_matcher:
                    matcher_list:
                      matchers:
                      - predicate:
                          single_predicate:
                            input:
                              name: color
                              typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-color}
                            value_match: {exact: blue}
                        on_match:
                          action:
                            name: blue
                            typed_config: {"@type": type.googleapis.com/envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction, cluster: blue_cluster}
              is_optional: true
            virtual_hosts:
            - name: picker_hosts
              domains: ["*"]
              routes:
              - match: {prefix: /named}
                route: {cluster_specifier_plugin: by_color}
              - match: {prefix: /optional}
                route: {cluster_specifier_plugin: not_in_outrigger}
              - match: {prefix: "/"}
                route:
                  inline_cluster_specifier_plugin:
                    extension:
                      name: envoy.router.cluster_specifier_plugin.lua
                      typed_config:
                        "@type": %[4]s
                        source_code:
                          inline_string: |
                            function envoy_on_route(route_handle)
                              local v = route_handle:headers():get("header_key")
                              if v == "blue" then
                                return "blue_cluster"
                              elseif v == "green" then
                                return "green_cluster"
                              elseif v == "fake" then
                                return "fake_cluster"
                              elseif v == "error" then
                                error("header_key says error")
                              elseif v == "number" then
                                return 7
                              end
                            end
                        default_cluster: green_cluster
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: green_cluster
    type: STATIC
    load_assignment:
      cluster_name: green_cluster
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]
  - name: blue_cluster
    type: STATIC
    load_assignment:
      cluster_name: blue_cluster
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[3]d}}}}]}]
`, port, portNum(green), portNum(blue), luaClusterSpecifierType)
}

// luaAdminOverlay adds an admin interface on a free port to the specs'
// configurations, which have none.
const luaAdminOverlay = "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}"

// colorUpstream answers every request with its name and path.
func colorUpstream(name string) string {
	GinkgoHelper()
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name+" "+r.URL.Path)
	}), false)
}

var _ = Describe("The Lua cluster specifier plugin", func() {
	client := &http.Client{Timeout: 5 * time.Second}

	It("serves Envoy's lua-cluster-specifier sandbox: example_cluster, and 503 for the cluster that does not exist", func() {
		raw, err := os.ReadFile(filepath.Join(compatDir, "lua-cluster-specifier.yaml"))
		Expect(err).NotTo(HaveOccurred())
		cfg := string(raw)
		// The sandbox's fixed ports move to free ones: its front
		// listener's, and its upstream listener's (which example_cluster
		// points at).
		port, upstream := freePort(), freePort()
		for fixed, use := range map[string]struct{ to, n int }{"10000": {port, 1}, "10001": {upstream, 2}} {
			Expect(strings.Count(cfg, "port_value: "+fixed+"\n")).To(Equal(use.n), "port %s", fixed)
			cfg = strings.ReplaceAll(cfg, "port_value: "+fixed+"\n", fmt.Sprintf("port_value: %d\n", use.to))
		}
		// The sandbox has no admin interface; the overlay adds one, for
		// the stats.
		s := Start(newDir(), cfg, "--config-yaml", luaAdminOverlay)
		for name, client := range httpClients() {
			r := httpDo(client, "GET", listenerURL(port, "/"), nil, nil)
			Expect(r.Status).To(Equal(200), name)
			Expect(r.Body).To(Equal("Helo!\n"), name)
			r = httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"header_key": {"fake"}})
			Expect(r.Status).To(Equal(503), name)
		}
		Expect(statValue(s, "http.ingress_http.no_cluster")).To(Equal("2"))
		Expect(statValue(s, "cluster.example_cluster.upstream_rq_200")).To(Equal("2"))
	})

	Context("with two upstreams", Ordered, func() {
		var (
			s    *Sidecar
			port int
		)
		BeforeAll(func() {
			port = freePort()
			s = Start(newDir(), luaPickerConfig(port, colorUpstream("green"), colorUpstream("blue")), "--config-yaml", luaAdminOverlay)
		})
		get := func(path string, header ...string) Response {
			GinkgoHelper()
			h := http.Header{}
			for i := 0; i+1 < len(header); i += 2 {
				h[header[i]] = []string{header[i+1]}
			}
			return httpDo(client, "GET", listenerURL(port, path), nil, h)
		}

		It("routes each request to the upstream the script picks from a header", func() {
			for range 3 {
				r := get("/a", "header_key", "blue")
				Expect(r.Status).To(Equal(200))
				Expect(r.Body).To(Equal("blue /a"))
				r = get("/b", "header_key", "green")
				Expect(r.Status).To(Equal(200))
				Expect(r.Body).To(Equal("green /b"))
			}
			Expect(statValue(s, "cluster.blue_cluster.upstream_rq_200")).To(Equal("3"))
		})

		It("routes to default_cluster when the script returns nothing, and logs it", func() {
			r := get("/c")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("green /c"))
			Eventually(s.Stderr).Should(ContainSubstring("script log: return value is not string, use default cluster"))
		})

		It("routes to default_cluster when the script fails, and logs the error", func() {
			r := get("/d", "header_key", "error")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("green /d"))
			Eventually(s.Stderr).Should(ContainSubstring("script log: source_code:10: header_key says error, use default cluster"))
		})

		It("answers 503 for a cluster that does not exist, or a number the script returns", func() {
			Expect(get("/e", "header_key", "fake").Status).To(Equal(503))
			Expect(get("/e", "header_key", "number").Status).To(Equal(503))
			Expect(statValue(s, "http.ingress_http.no_cluster")).To(Equal("2"))
		})

		It("runs a named plugin of the route configuration", func() {
			Expect(get("/named", "x-color", "blue").Body).To(Equal("blue /named"))
			Expect(get("/named", "x-color", "green").Body).To(Equal("green /named"))
			// No x-color: concatenating nil fails the script.
			Expect(get("/named").Body).To(Equal("green /named"))
		})

		It("runs an optional matcher plugin, which Outrigger has", func() {
			r := get("/optional", "x-color", "blue")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("blue /optional"))
			Expect(get("/optional", "header_key", "blue").Status).To(Equal(503))
		})
	})

	It("refuses at load a script that does not compile or has no envoy_on_route, naming the field", func() {
		for code, want := range map[string]string{
			`function envoy_on_route(h) return "x"`:  "script does not compile",
			`function envoy_on_route_cluster(h) end`: "envoy_on_route() function not found. Lua will not hook cluster specifier.",
		} {
			cfg := luaPickerConfig(freePort(), "127.0.0.1:1", "127.0.0.1:2")
			cfg = strings.Replace(cfg, `function envoy_on_route(route_handle)
                        return route_handle:headers():get("x-color") .. "_cluster"
                      end`, code, 1)
			dir := newDir()
			path := filepath.Join(dir, "bootstrap.yaml")
			writeFile(path, cfg)
			r := Run("--mode", "validate", "-c", path)
			Expect(r.ExitCode).NotTo(Equal(0))
			Expect(r.Stderr).To(ContainSubstring("route_config.cluster_specifier_plugins[0].extension.typed_config.source_code: " + want))
		}
	})
})
