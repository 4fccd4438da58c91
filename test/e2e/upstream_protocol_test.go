package e2e

import (
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// downstreamProtocolBootstrap routes /typed/ to a cluster with
// use_downstream_protocol_config and everything else to one with the
// deprecated protocol_selection: USE_DOWNSTREAM_PROTOCOL, both reaching
// the upstream at upPort, which speaks HTTP/1.1 and h2c.
func downstreamProtocolBootstrap(port, upPort int) string {
	return fmt.Sprintf(`admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: l
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {prefix: /typed/}, route: {cluster: typed}}
              - {match: {prefix: /}, route: {cluster: legacy}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: typed
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        use_downstream_protocol_config:
          http_protocol_options: {header_key_format: {proper_case_words: {}}}
          http2_protocol_options: {max_concurrent_streams: 100}
    load_assignment:
      cluster_name: typed
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]
  - name: legacy
    connect_timeout: 1s
    protocol_selection: USE_DOWNSTREAM_PROTOCOL
    load_assignment:
      cluster_name: legacy
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]
`, port, upPort)
}

var _ = Describe("The upstream protocol following the client's", func() {
	It("speaks HTTP/2 upstream for HTTP/2 clients and HTTP/1.1 for the others, with use_downstream_protocol_config and protocol_selection alike", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, r.Proto)
		}), true))
		port := freePort()
		s := Start(newDir(), downstreamProtocolBootstrap(port, up))
		for _, path := range []string{"/typed/x", "/legacy"} {
			for proto, want := range map[string]string{"HTTP/1.1": "HTTP/1.1", "HTTP/2": "HTTP/2.0"} {
				r := httpDo(httpClients()[proto], "GET", listenerURL(port, path), nil, nil)
				Expect(r.Status).To(Equal(200), "%s over %s: %s %v", path, proto, r.Body, r.Header)
				Expect(r.Body).To(Equal(want), "%s over %s", path, proto)
			}
		}
		for _, c := range []string{"typed", "legacy"} {
			Expect(statValue(s, "cluster."+c+".upstream_cx_http1_total")).To(Equal("1"), c)
			Expect(statValue(s, "cluster."+c+".upstream_cx_http2_total")).To(Equal("1"), c)
		}
	})

	It("refuses a client-only option inside use_downstream_protocol_config with its path", func() {
		cfg := downstreamProtocolBootstrap(freePort(), 1)
		r, _ := validate("bootstrap.yaml", strings.Replace(cfg, "http_protocol_options: {header_key_format: {proper_case_words: {}}}", "http_protocol_options: {accept_http_10: true}", 1))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].use_downstream_protocol_config.http_protocol_options.accept_http_10: not supported by Outrigger on a cluster (it applies to client connections only)`))
	})
})
