package e2e

import (
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Circuit breakers by route priority", func() {
	// Both priorities allow one request in flight; /high routes with
	// priority HIGH, the rest with the DEFAULT priority.
	run := func(h2 bool) {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, h2)
		extra := "{" + `circuit_breakers: {thresholds: [{max_requests: 1}, {priority: HIGH, max_requests: 1}]}` + "}"
		if h2 {
			extra = strings.TrimSuffix(h2cOptions(), "}") + `, circuit_breakers: {thresholds: [{max_requests: 1}, {priority: HIGH, max_requests: 1}]}}`
		}
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: "/high"}, route: {cluster: slow, priority: HIGH}},
			          {match: {prefix: "/"}, route: {cluster: slow}}]`,
			Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr), Extra: extra}},
		}.YAML())
		s.WaitLive()
		cb := func(priority, name string) string {
			return statValue(s, "cluster.slow.circuit_breakers."+priority+"."+name)
		}

		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive(Equal("/first")))
		Expect(cb("default", "rq_open")).To(Equal("1"))
		status, overloaded, _ := breakerGet(port, "/second")
		Expect(status).To(Equal(http.StatusServiceUnavailable), "DEFAULT past its max_requests")
		Expect(overloaded).To(Equal("true"))

		// DEFAULT's breaker is open: a HIGH route's request still goes.
		high := asyncGet(port, "/high/1")
		Eventually(up.arrived, 10*time.Second).Should(Receive(Equal("/high/1")))
		Expect(cb("high", "rq_open")).To(Equal("1"))
		status, overloaded, _ = breakerGet(port, "/high/2")
		Expect(status).To(Equal(http.StatusServiceUnavailable), "HIGH past its own max_requests")
		Expect(overloaded).To(Equal("true"))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_overflow")).To(Equal("2"))

		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Eventually(high, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Eventually(func() []string { return []string{cb("default", "rq_open"), cb("high", "rq_open")} }, 10*time.Second).
			Should(Equal([]string{"0", "0"}))
		status, _, _ = breakerGet(port, "/high/3")
		Expect(status).To(Equal(http.StatusOK))
	}

	It("counts a HIGH route's HTTP/1.1 requests against the cluster's HIGH thresholds, not blocked when DEFAULT's overflow", func() {
		run(false)
	})

	It("counts a HIGH route's HTTP/2 requests against the cluster's HIGH thresholds, not blocked when DEFAULT's overflow", func() {
		run(true)
	})
})
