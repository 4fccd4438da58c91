package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A virtual host's require_tls", func() {
	It("redirects plaintext requests to https with a 301, and serves the ones a trusted hop says came over TLS", func() {
		port := freePort()
		Start(newDir(), fmt.Sprintf(`
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: web
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: web
          route_config:
            virtual_hosts:
            - name: secure
              domains: [secure.example]
              require_tls: ALL
              routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: secure}}}]
            - name: open
              domains: ["*"]
              routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: open}}}]
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`, port))
		r := routeGet(port, "secure.example", "/account?tab=1", nil)
		Expect(r.Status).To(Equal(301))
		Expect(r.Header.Get("Location")).To(Equal("https://secure.example/account?tab=1"))

		// Without use_remote_address the client's x-forwarded-proto is
		// trusted, as a TLS-terminating hop in front would send it.
		r = routeGet(port, "secure.example", "/account", map[string][]string{"X-Forwarded-Proto": {"https"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("secure"))

		r = routeGet(port, "other.example", "/account", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("open"))
	})
})
