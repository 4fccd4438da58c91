package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// headerEchoUpstream answers with the request's Host and headers as JSON.
func headerEchoUpstream() int {
	GinkgoHelper()
	return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := map[string]string{"host": r.Host}
		for k, v := range r.Header {
			out[http.CanonicalHeaderKey(k)] = v[0]
		}
		_ = json.NewEncoder(w).Encode(out)
	}), false))
}

var _ = Describe("Connection manager request headers: add_user_agent, append_x_forwarded_port, strip_trailing_host_dot", func() {
	It("names this proxy to the upstream, says which port the client used, and drops a host's trailing dot", func() {
		up := headerEchoUpstream()
		port := freePort()
		cfg := fmt.Sprintf(`admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
node: {id: orders-7d9f, cluster: orders}
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
          use_remote_address: true
          add_user_agent: true
          append_x_forwarded_port: true
          strip_trailing_host_dot: true
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes: [{match: {prefix: /}, route: {cluster: up}}]
          http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
  clusters:
  - name: up
    connect_timeout: 1s
    load_assignment:
      cluster_name: up
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]
`, port, up)
		Start(newDir(), cfg)
		get := func(host string, h http.Header) map[string]string {
			GinkgoHelper()
			req, err := http.NewRequest("GET", listenerURL(port, "/"), nil)
			Expect(err).NotTo(HaveOccurred())
			req.Host = host
			for k, v := range h {
				req.Header[k] = v
			}
			resp, err := (&http.Client{}).Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			var got map[string]string
			Expect(json.NewDecoder(resp.Body).Decode(&got)).To(Succeed())
			return got
		}

		// No user-agent: the service cluster stands in for it.
		got := get("shop.example.com.:8443", http.Header{"User-Agent": {""}, "X-Forwarded-Port": {"1"}, "X-Envoy-Downstream-Service-Cluster": {"spoofed"}})
		Expect(got).To(HaveKeyWithValue("host", "shop.example.com:8443"))
		Expect(got).To(HaveKeyWithValue("X-Envoy-Downstream-Service-Cluster", "orders"))
		Expect(got).To(HaveKeyWithValue("X-Envoy-Downstream-Service-Node", "orders-7d9f"))
		Expect(got).To(HaveKeyWithValue("User-Agent", "orders"))
		Expect(got).To(HaveKeyWithValue("X-Forwarded-Port", fmt.Sprint(port)), "the client's value is not trusted without trusted hops")

		// A client's own user-agent is kept; a host without a dot too.
		got = get("shop.example.com", http.Header{"User-Agent": {"curl/8"}})
		Expect(got).To(HaveKeyWithValue("host", "shop.example.com"))
		Expect(got).To(HaveKeyWithValue("User-Agent", "curl/8"))
	})
})
