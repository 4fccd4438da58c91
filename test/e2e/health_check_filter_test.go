package e2e

import (
	"net/http"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const healthCheckType = "type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck"

var _ = Describe("The health_check filter's cluster_min_healthy_percentages and cache_time", func() {
	plain := httpClients()["HTTP/1.1"]

	It("answers 503 while a listed cluster is missing, empty or below its share of healthy hosts", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), false)
		upPort := portNum(up)
		status := func(mins string) int {
			GinkgoHelper()
			port := freePort()
			Start(newDir(), proxySpec{
				Port: port,
				Filters: "[" + httpFilter("envoy.filters.http.health_check", healthCheckType,
					`{pass_through_mode: false, headers: [{name: ":path", string_match: {exact: /healthz}}], cluster_min_healthy_percentages: `+mins+`}`) + "]",
				Clusters: []proxyCluster{
					{Name: "up", Port: upPort},
					{Name: "sick", Port: upPort, Endpoint: "{health_status: UNHEALTHY}"},
					{Name: "empty", Port: upPort, Extra: "{load_assignment: {cluster_name: empty, endpoints: []}}"},
				},
			}.YAML())
			return httpDo(plain, "GET", listenerURL(port, "/healthz"), nil, nil).Status
		}
		Expect(status("{up: {value: 100}, empty: {value: 0}}")).To(Equal(200))
		Expect(status("{up: {value: 100}, sick: {value: 50}}")).To(Equal(503), "no healthy host in sick")
		Expect(status("{up: {value: 100}, nope: {value: 1}}")).To(Equal(503), "no such cluster")
		Expect(status("{empty: {value: 1}}")).To(Equal(503), "an empty cluster with a minimum above 0")
	})

	It("in pass-through mode with cache_time, sends one health check upstream per period and answers the others with its status", func() {
		var upstream atomic.Int32
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			upstream.Add(1)
			w.Header().Set("x-envoy-degraded", "")
			w.WriteHeader(http.StatusServiceUnavailable)
		}), false)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Filters: "[" + httpFilter("envoy.filters.http.health_check", healthCheckType,
				`{pass_through_mode: true, cache_time: 3600s, headers: [{name: ":path", string_match: {exact: /healthz}}]}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		for i := range 3 {
			r := httpDo(plain, "GET", listenerURL(port, "/healthz"), nil, nil)
			Expect(r.Status).To(Equal(503), "check %d", i)
			Expect(r.Header).To(HaveKey("X-Envoy-Degraded"), "check %d", i)
		}
		Expect(upstream.Load()).To(Equal(int32(1)), "only the first check of the period reaches the upstream")
		Expect(httpDo(plain, "GET", listenerURL(port, "/other"), nil, nil).Status).To(Equal(503))
		Expect(upstream.Load()).To(Equal(int32(2)), "other requests are not health checks")
	})
})
