package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// routerOptionsBootstrap routes /v1/ (rewritten to /v2/, host rewritten)
// to a header-echo upstream, through a router with the given options (a
// YAML flow mapping of Router fields).
func routerOptionsBootstrap(port, up int, router string) string {
	return proxySpec{
		Port:     port,
		HCM:      "{stat_prefix: ro}",
		Routes:   `[{match: {prefix: /v1/}, route: {cluster: up, prefix_rewrite: /v2/, host_rewrite_literal: internal.example, timeout: 5s}}]`,
		Router:   router,
		Clusters: []proxyCluster{{Name: "up", Port: up}},
	}.YAML()
}

var _ = Describe("Router options: suppress_envoy_headers and dynamic_stats", func() {
	get := func(port int) (map[string]string, http.Header) {
		GinkgoHelper()
		resp, err := http.Get(listenerURL(port, "/v1/x"))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var seen map[string]string
		Expect(json.NewDecoder(resp.Body).Decode(&seen)).To(Succeed())
		return seen, resp.Header
	}

	It("adds the router's x-envoy- headers and counts per-code stats by default", func() {
		up, port := headerEchoUpstream(), freePort()
		s := Start(newDir(), routerOptionsBootstrap(port, up, ""))
		seen, h := get(port)
		Expect(seen).To(HaveKeyWithValue("X-Envoy-Original-Path", "/v1/x"))
		Expect(seen).To(HaveKeyWithValue("X-Envoy-Original-Host", fmt.Sprintf("127.0.0.1:%d", port)))
		Expect(seen).To(HaveKeyWithValue("X-Envoy-Expected-Rq-Timeout-Ms", "5000"))
		Expect(h.Get("X-Envoy-Upstream-Service-Time")).NotTo(BeEmpty())
		// The stats are counted once the response is written.
		Eventually(func() string { return statValue(s, "cluster.up.upstream_rq_200") }).Should(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_2xx")).To(Equal("1"))
	})

	It("leaves them out with suppress_envoy_headers, and the per-code stats with dynamic_stats: false", func() {
		up, port := headerEchoUpstream(), freePort()
		s := Start(newDir(), routerOptionsBootstrap(port, up, "{suppress_envoy_headers: true, dynamic_stats: false}"))
		seen, h := get(port)
		Expect(seen).To(HaveKeyWithValue("host", "internal.example"), "the rewrites still apply")
		for _, name := range []string{"X-Envoy-Original-Path", "X-Envoy-Original-Host", "X-Envoy-Expected-Rq-Timeout-Ms"} {
			Expect(seen).NotTo(HaveKey(name))
		}
		Expect(h.Values("X-Envoy-Upstream-Service-Time")).To(BeEmpty())
		Expect(statValue(s, "cluster.up.upstream_rq_total")).To(Equal("1"))
		// Counted once the response is written; the per-code ones never.
		Eventually(func() string { return statValue(s, "cluster.up.upstream_rq_completed") }).Should(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_2xx")).To(Equal("0"))
	})
})
