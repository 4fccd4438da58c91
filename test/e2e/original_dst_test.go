package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// originalDstBootstrap is an HTTP listener routing to an ORIGINAL_DST
// cluster that reads x-envoy-original-dst-host, and a tcp_proxy listener
// to another ORIGINAL_DST cluster (its connections have no restored
// destination on loopback: no REDIRECT rule sent them).
func originalDstBootstrap(httpPort, tcpPort int) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: http
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: front
          route_config:
            virtual_hosts:
            - {name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: dst}}]}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  - name: tcp
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
          stat_prefix: tcp
          cluster: passthrough
  clusters:
  - name: dst
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    connect_timeout: 1s
    original_dst_lb_config: {use_http_header: true}
  - name: passthrough
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    connect_timeout: 1s
    cleanup_interval: 0.2s
`, httpPort, tcpPort)
}

var _ = Describe("ORIGINAL_DST clusters", func() {
	It("send a request to the host x-envoy-original-dst-host names, creating it on demand", func() {
		up := startUpstream(false)
		httpPort, tcpPort := freePort(), freePort()
		s := Start(newDir(), originalDstBootstrap(httpPort, tcpPort))
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}
		header := func(v string) http.Header { return http.Header{"X-Envoy-Original-Dst-Host": {v}} }

		r := httpDo(client, http.MethodGet, listenerURL(httpPort, "/"), nil, header(fmt.Sprintf("127.0.0.1:%d", up.port)))
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Body).To(Equal("ok"))
		Expect(statValue(s, "cluster.dst.upstream_rq_total")).To(Equal("1"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring(fmt.Sprintf("dst::127.0.0.1:%d::rq_total::1", up.port)))
		Expect(s.Get("/clusters").Body).To(ContainSubstring(fmt.Sprintf("dst::127.0.0.1:%d::hostname::dst127.0.0.1:%d", up.port, up.port)))

		// Without the header, and with a value that is not an address,
		// the connection (not redirected here) has no original
		// destination: no host.
		r = httpDo(client, http.MethodGet, listenerURL(httpPort, "/"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusServiceUnavailable))
		Expect(r.Body).To(Equal("no healthy upstream"))
		r = httpDo(client, http.MethodGet, listenerURL(httpPort, "/"), nil, header("upstream.example:80"))
		Expect(r.Status).To(Equal(http.StatusServiceUnavailable))
		Expect(statValue(s, "cluster.dst.original_dst_host_invalid")).To(Equal("1"))
		Expect(statValue(s, "cluster.dst.upstream_cx_none_healthy")).To(Equal("2"))

		// tcp_proxy: no original destination, no host; the connection
		// is closed.
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred(), "the proxy closes the connection")
		Eventually(func() string { return statValue(s, "cluster.passthrough.upstream_cx_none_healthy") }).Should(Equal("1"))
	})

	It("sends a request to the host its dynamic metadata names at metadata_key, before the header", func() {
		up := startUpstream(false)
		port := freePort()
		// The bootstrap above, with a filter that records the host in
		// the dynamic metadata (a list: its first element counts) and the
		// cluster reading it.
		cfg := strings.Replace(originalDstBootstrap(port, freePort()), "          http_filters:\n", fmt.Sprintf(`          http_filters:
          - name: envoy.filters.http.set_metadata
            typed_config: {"@type": %s, metadata: [{metadata_namespace: routing, value: {dst: ["127.0.0.1:%d"]}}]}
`, setMetadataType, up.port), 1)
		cfg = strings.Replace(cfg, "original_dst_lb_config: {use_http_header: true}",
			"original_dst_lb_config: {use_http_header: true, metadata_key: {key: routing, path: [{key: dst}]}}", 1)
		s := Start(newDir(), cfg)
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}
		// The header names a port nothing listens on: the metadata wins.
		header := http.Header{"X-Envoy-Original-Dst-Host": {"127.0.0.1:1"}}
		r := httpDo(client, http.MethodGet, listenerURL(port, "/"), nil, header)
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Body).To(Equal("ok"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring(fmt.Sprintf("dst::127.0.0.1:%d::rq_total::1", up.port)))
		Expect(statValue(s, "cluster.dst.original_dst_host_invalid")).To(Equal("0"))
	})

	It("refuses the settings Envoy refuses, naming the field", func() {
		r := Run("--mode", "validate", "--config-yaml", `
static_resources:
  clusters:
  - {name: a, type: ORIGINAL_DST}
  - {name: b, type: ORIGINAL_DST, lb_policy: CLUSTER_PROVIDED, load_assignment: {cluster_name: b}}
  - {name: c, type: ORIGINAL_DST, lb_policy: CLUSTER_PROVIDED, original_dst_lb_config: {metadata_key: {key: k, path: [{key: ""}]}}}
`)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].lb_policy: LB policy ROUND_ROBIN is not valid for Cluster type ORIGINAL_DST"))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[1].load_assignment: ORIGINAL_DST clusters must have no load assignment configured"))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[2].original_dst_lb_config.metadata_key.path[0].key: "))
	})

	It("takes the typed cluster_provided policy as lb_policy CLUSTER_PROVIDED, and a cluster type without a balancer of its own refuses it", func() {
		up := startUpstream(false)
		httpPort, tcpPort := freePort(), freePort()
		cfg := strings.Replace(originalDstBootstrap(httpPort, tcpPort), "    original_dst_lb_config: {use_http_header: true}",
			"    original_dst_lb_config: {use_http_header: true}\n"+
				"    load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.cluster_provided, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.load_balancing_policies.cluster_provided.v3.ClusterProvided}}}]}", 1)
		Expect(cfg).To(ContainSubstring("cluster_provided.v3.ClusterProvided"))
		s := Start(newDir(), cfg)
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}
		r := httpDo(client, http.MethodGet, listenerURL(httpPort, "/"), nil, http.Header{"X-Envoy-Original-Dst-Host": {fmt.Sprintf("127.0.0.1:%d", up.port)}})
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(statValue(s, "cluster.dst.upstream_rq_total")).To(Equal("1"))

		v := Run("--mode", "validate", "--config-yaml", `
static_resources:
  clusters:
  - name: st
    load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.cluster_provided, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.cluster_provided.v3.ClusterProvided}}}]}
    load_assignment: {cluster_name: st, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}
  - name: od
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    load_balancing_policy: {policies: [{typed_extension_config: {name: envoy.load_balancing_policies.round_robin, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin}}}]}
`)
		Expect(v.ExitCode).To(Equal(1))
		Expect(v.Stderr).To(ContainSubstring(`static_resources.clusters[0].load_balancing_policy: cluster provided LB specified but cluster "st" did not provide one`))
		Expect(v.Stderr).To(ContainSubstring("static_resources.clusters[1].load_balancing_policy: an ORIGINAL_DST cluster balances by its own rules: only envoy.load_balancing_policies.cluster_provided is allowed"))
	})
})
