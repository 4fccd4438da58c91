package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Hedging", func() {
	It("refuses hedge_policy's fields by path, those Envoy does not implement saying so", func() {
		cfg := proxySpec{
			Port:        freePort(),
			VirtualHost: `{hedge_policy: {initial_requests: 2}}`,
			Routes: `[{match: {prefix: /a}, route: {cluster: up, hedge_policy: {hedge_on_per_try_timeout: true}}},
			 {match: {prefix: /}, route: {cluster: up, hedge_policy: {additional_request_chance: {numerator: 5}}}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: 9}},
		}.YAML()
		r, _ := validate("hedge.yaml", cfg)
		Expect(r.ExitCode).NotTo(Equal(0))
		const vh = "route_config.virtual_hosts[0]"
		Expect(r.Stderr).To(ContainSubstring(vh + ".routes[0].route.hedge_policy.hedge_on_per_try_timeout: not supported by Outrigger"))
		for _, path := range []string{vh + ".routes[1].route.hedge_policy.additional_request_chance", vh + ".hedge_policy.initial_requests"} {
			Expect(r.Stderr).To(ContainSubstring(path + ": not implemented by Envoy either"))
		}
	})

	It("serves an empty hedge_policy as Envoy's default: a per-try timeout resets the attempt and retries, never hedging", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		addr := httpTestUpstream(up, false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:        port,
			Routes:      retryRoutes,
			VirtualHost: `{hedge_policy: {}, include_attempt_count_in_response: true, include_request_attempt_count: true}`,
			HCM:         `{` + internalLoopback + `}`,
			Clusters:    []proxyCluster{{Name: "up", Port: portNum(addr)}},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		req, err := http.NewRequest(http.MethodGet, listenerURL(port, "/hang/a"), nil)
		Expect(err).NotTo(HaveOccurred())
		// The header form is removed and has no effect either.
		req.Header.Set("x-envoy-hedge-on-per-try-timeout", "true")
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("x-envoy-attempt-count")).To(Equal("2"))
		Expect(statValue(s, "cluster.up.upstream_rq_per_try_timeout")).To(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("1"))
	})
})
