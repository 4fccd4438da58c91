package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Cluster track_cluster_stats", func() {
	It("records the timeout budget and request/response size histograms, in /stats and /stats/prometheus", func() {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: ingress}",
			// Histograms show in /stats once merged, at each flush.
			Top:    "{stats_flush_interval: 0.2s}",
			Routes: `[{match: {prefix: "/"}, route: {cluster: up, timeout: 10s}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr),
				Extra: "{track_cluster_stats: {timeout_budgets: true, request_response_sizes: true}}"}},
		}.YAML())
		r := httpDo(httpClients()["HTTP/1.1"], http.MethodPost, listenerURL(port, "/"), strings.NewReader("12345"), nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("ok"))
		names := []string{
			"upstream_rq_timeout_budget_percent_used", "upstream_rq_timeout_budget_per_try_percent_used",
			"upstream_rq_headers_size", "upstream_rq_body_size", "upstream_rs_headers_size", "upstream_rs_body_size",
		}
		Eventually(func() map[string]string {
			return statValues(s, `^cluster\.up\.upstream_r[qs]_(timeout_budget|headers_size|body_size)`)
		}, 20*time.Second).
			Should(HaveLen(len(names)))
		Eventually(func() map[string]string { return statValues(s, `^cluster\.up\.upstream_r[qs]_body_size$`) }, 20*time.Second).Should(And(
			// One sample each: the request's 5 body bytes, the response's 2.
			HaveKeyWithValue("cluster.up.upstream_rq_body_size", ContainSubstring("P0(nan,5)")),
			HaveKeyWithValue("cluster.up.upstream_rs_body_size", ContainSubstring("P0(nan,2)")),
		))
		prom := s.Get("/stats/prometheus")
		Expect(prom.Status).To(Equal(200))
		for _, n := range names {
			Expect(promSample(prom.Body, "proxy_cluster_"+n+"_count", `proxy_cluster_name="up"`)).To(Equal("1"), n)
			Expect(prom.Body).To(ContainSubstring("# HELP proxy_cluster_"+n+" "), n)
		}
	})

	It("records the timeout budgets with the deprecated track_timeout_budgets, and nothing without either", func() {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: ingress}",
			Top:      "{stats_flush_interval: 0.2s}",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr), Extra: "{track_timeout_budgets: true}"}, {Name: "plain", Port: portNum(up.addr)}},
		}.YAML())
		Expect(httpDo(httpClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		Eventually(func() map[string]string { return statValues(s, `^cluster\.up\.upstream_rq_timeout_budget`) }, 20*time.Second).Should(HaveLen(2))
		for _, filter := range []string{`^cluster\.up\.upstream_r[qs]_(headers|body)_size`, `^cluster\.plain\.upstream_r[qs]_(timeout_budget|headers_size|body_size)`} {
			r := s.Get("/stats?filter=" + url.QueryEscape(filter))
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(BeEmpty(), filter)
		}
	})

	It("refuses per_endpoint_stats with its path", func() {
		r, _ := validate("bootstrap.yaml", proxySpec{Port: freePort(), HCM: "{stat_prefix: ingress}",
			Clusters: []proxyCluster{{Name: "up", Port: 1, Extra: "{track_cluster_stats: {per_endpoint_stats: true}}"}}}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("track_cluster_stats.per_endpoint_stats: not supported by Outrigger"))
	})
})
