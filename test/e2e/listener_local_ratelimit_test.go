package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The local rate limit listener filter", func() {
	It("closes the sockets accepted past its token bucket before they reach the filter chain, and counts them", func() {
		up := startTCPServer(echo)
		port := freePort()
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: limited
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    listener_filters:
    - name: envoy.filters.listener.local_ratelimit
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.local_ratelimit.v3.LocalRateLimit,
        stat_prefix: front, token_bucket: {max_tokens: 2, tokens_per_fill: 1, fill_interval: 3600s}}
    filter_chains:
    - filters:
      - {name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: front, cluster: echo}}
`, tcpCluster("echo", up), port)
		s := Start(newDir(), cfg)

		for range 2 {
			c := dialTCP(port)
			expectEcho(c)
			Expect(c.Close()).To(Succeed())
		}
		expectClosedSilently(dialTCP(port))
		Expect(statValue(s, "listener_local_ratelimit.front.rate_limited")).To(Equal("1"))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("2"), "the limited socket never reached tcp_proxy")
		Expect(s.Get("/stats/prometheus").Body).To(ContainSubstring("# HELP proxy_listener_local_ratelimit_rate_limited Sockets the listener's local rate limit closed"))
	})
})
