package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP connection manager record_route_resolution_stats", func() {
	start := func(hcm string) (*Sidecar, int) {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: ingress" + hcm + "}",
			// Histograms show in /stats once merged, at each flush.
			Top:      "{stats_flush_interval: 0.2s}",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr)}},
		}.YAML())
		r := httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		return s, port
	}

	It("records each request's route resolution time and count in two histograms", func() {
		s, _ := start(", record_route_resolution_stats: true")
		Eventually(func() map[string]string { return statValues(s, "route_resolution") }, 20*time.Second).Should(And(
			HaveKeyWithValue("http.ingress.downstream_rq_route_resolution_time_us", ContainSubstring("P0(")),
			HaveKeyWithValue("http.ingress.downstream_rq_route_resolutions", ContainSubstring("P0(nan,1)")),
		))
	})

	It("keeps the default stat set without it", func() {
		s, _ := start("")
		r := s.Get("/stats")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(ContainSubstring("http.ingress.downstream_rq_time"))
		Expect(r.Body).NotTo(ContainSubstring("route_resolution"))
	})
})
