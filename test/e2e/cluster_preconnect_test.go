package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Cluster preconnect_policy", func() {
	It("opens a connection ahead of demand with per_upstream_preconnect_ratio, which the next request uses", func() {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: ingress}",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr), Extra: "{preconnect_policy: {per_upstream_preconnect_ratio: 2}}"}},
		}.YAML())
		s.WaitLive()
		Expect(statValue(s, "cluster.up.upstream_cx_total")).To(Equal("0"))
		c := httpClients()["HTTP/1.1"]
		Expect(httpDo(c, http.MethodGet, listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		// The request's connection and one more, before a second request.
		Eventually(func() string { return statValue(s, "cluster.up.upstream_cx_total") }, 10*time.Second).Should(Equal("2"))
		Eventually(up.connections.Load, 10*time.Second).Should(BeEquivalentTo(2))
		Expect(statValue(s, "cluster.up.upstream_cx_active")).To(Equal("2"))
	})

	It("refuses predictive_preconnect_ratio with its path", func() {
		r, _ := validate("bootstrap.yaml", proxySpec{Port: freePort(), HCM: "{stat_prefix: ingress}",
			Clusters: []proxyCluster{{Name: "up", Port: 1, Extra: "{preconnect_policy: {predictive_preconnect_ratio: 2}}"}}}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("preconnect_policy.predictive_preconnect_ratio: not supported by Outrigger"))
	})
})
