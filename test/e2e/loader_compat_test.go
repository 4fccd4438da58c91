package e2e

import (
	"fmt"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Configurations written the ways people write them for Envoy load
// unchanged: enum values in lower case, filter configurations in a
// TypedStruct, deprecated fields (with a warning).
var _ = Describe("Loader compatibility", func() {
	client := &http.Client{Timeout: 5 * time.Second}

	It("loads lower-case enums and a TypedStruct filter configuration, and serves", func() {
		port := freePort()
		cfg := fmt.Sprintf(`
admin:
  access_log_path: /dev/null
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: compat
          codec_type: auto
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /}
                direct_response: {status: 200, body: {inline_string: compatible}}
          http_filters:
          - name: envoy.filters.http.health_check
            typed_config:
              "@type": type.googleapis.com/udpa.type.v1.TypedStruct
              type_url: type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck
              value:
                pass_through_mode: false
                headers: [{name: ":path", string_match: {exact: /healthz}}]
          - name: envoy.filters.http.router
  clusters:
  - name: unused
    type: static
    lb_policy: round_robin
    load_assignment: {cluster_name: unused}
`, port)
		s := Start(newDir(), cfg)
		for path, want := range map[string]string{"/x": "compatible", "/healthz": ""} {
			resp, err := client.Get(listenerURL(port, path))
			Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(200))
			Expect(string(body)).To(Equal(want), path)
		}
		By("the deprecated admin.access_log_path is warned about and counted")
		Expect(s.Stderr()).To(ContainSubstring("Using deprecated option 'envoy.config.bootstrap.v3.Admin.access_log_path'"))
		Expect(statValue(s, "runtime.deprecated_feature_use")).To(Equal("1"))
		Expect(statValue(s, "runtime.deprecated_feature_seen_since_process_start")).To(Equal("1"))
	})

	It("reports a TypedStruct's bad field with its path", func() {
		r, _ := validate("b.yaml", fmt.Sprintf(`
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: compat
          route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}]}
          http_filters:
          - name: hc
            typed_config:
              "@type": type.googleapis.com/xds.type.v3.TypedStruct
              type_url: type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck
              value: {pass_through_mode: false, colour: red}
          - name: envoy.filters.http.router
`, freePort()))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config.value.colour: unknown field"))
	})
})
