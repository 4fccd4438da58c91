package e2e

import (
	"net/http"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const adaptiveConcurrencyType = "type.googleapis.com/envoy.extensions.filters.http.adaptive_concurrency.v3.AdaptiveConcurrency"

var _ = Describe("The adaptive_concurrency filter", func() {
	It("holds the requests in flight to min_concurrency while it measures the minRTT, refusing the others, then restores the limit", func() {
		release := make(chan struct{})
		var (
			once    sync.Once
			holding atomic.Int32
		)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				holding.Add(1)
				<-release
			}
			_, _ = w.Write([]byte("ok"))
		}), false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{stat_prefix: web}`,
			Filters: "[" + httpFilter("envoy.filters.http.adaptive_concurrency", adaptiveConcurrencyType, `{gradient_controller_config: {
				concurrency_limit_params: {concurrency_update_interval: 3600s},
				min_rtt_calc_params: {interval: 3600s, request_count: 3, min_concurrency: 2, jitter: {value: 0}}},
				concurrency_limit_exceeded_status: {code: 429}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		// Registered after the sidecar: released before it stops.
		DeferCleanup(func() { once.Do(func() { close(release) }) })
		const g = "http.web.adaptive_concurrency.gradient_controller."
		Expect(statValue(s, g+"concurrency_limit")).To(Equal("2"))
		Expect(statValue(s, g+"min_rtt_calculation_active")).To(Equal("1"))

		held := make(chan Response, 2)
		for range 2 {
			go func() {
				defer GinkgoRecover()
				held <- httpDo(&http.Client{}, http.MethodGet, listenerURL(port, "/hold"), nil, nil)
			}()
		}
		// With both held requests at the upstream, a third is refused.
		Eventually(holding.Load, "10s", "10ms").Should(Equal(int32(2)))
		r := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(429))
		Expect(r.Body).To(Equal("reached concurrency limit"))

		once.Do(func() { close(release) })
		Expect((<-held).Status).To(Equal(200))
		Expect((<-held).Status).To(Equal(200))
		// Three samples end the minRTT window (the two held requests
		// count); one more request makes sure.
		Expect(httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		Eventually(func() string { return statValue(s, g+"min_rtt_calculation_active") }).Should(Equal("0"))
		Expect(statValue(s, g+"concurrency_limit")).To(Equal("2"))
		blocked := statInt(s, g+"rq_blocked")
		Expect(blocked).To(Equal(int64(1)))
	})

	It("takes a fixed minRTT with no minRTT window, and min_concurrency_limit as the floor of the limit", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}), false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{stat_prefix: web}`,
			Filters: "[" + httpFilter("envoy.filters.http.adaptive_concurrency", adaptiveConcurrencyType, `{gradient_controller_config: {
				concurrency_limit_params: {concurrency_update_interval: 0.05s, min_concurrency_limit: 6},
				min_rtt_calc_params: {fixed_value: 0.000001s, min_concurrency: 2}}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		const g = "http.web.adaptive_concurrency.gradient_controller."
		// No window: requests are sampled from the start, and the limit
		// starts at min_concurrency.
		Expect(statValue(s, g+"min_rtt_calculation_active")).To(Equal("0"))
		Expect(statValue(s, g+"concurrency_limit")).To(Equal("2"))
		// Every request takes far longer than the 1 µs minRTT: the
		// gradient floors at 0.5 and the limit goes to its floor of 6,
		// above min_concurrency.
		Eventually(func() string {
			Expect(httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
			return statValue(s, g+"concurrency_limit")
		}, "10s", "20ms").Should(Equal("6"))
		Expect(statValue(s, g+"gradient")).To(Equal("500"))
		Expect(statValue(s, g+"min_rtt_calculation_active")).To(Equal("0"))
	})

	It("refuses a zero interval without a fixed minRTT, with its path", func() {
		r, _ := validate("b.yaml", proxySpec{
			Port: freePort(),
			Filters: "[" + httpFilter("envoy.filters.http.adaptive_concurrency", adaptiveConcurrencyType, `{gradient_controller_config: {
				concurrency_limit_params: {concurrency_update_interval: 1s}, min_rtt_calc_params: {interval: 0s}}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("gradient_controller_config.min_rtt_calc_params.fixed_value: must be positive when interval is zero"))
	})
})
