package e2e

import (
	"net/http"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// faultBootstrap is a listener whose fault filter has the given
// configuration (extra HTTPFault fields, a YAML flow mapping), in front of
// an upstream answering "up"; runtime is the static runtime layer (a YAML
// flow mapping), "" for none. The runtime has an admin layer.
func faultBootstrap(port, upPort int, fault, runtime string) string {
	layers := "{name: admin, admin_layer: {}}"
	if runtime != "" {
		layers = "{name: static, static_layer: " + runtime + "}, " + layers
	}
	return proxySpec{
		Port:     port,
		HCM:      "{stat_prefix: faulty}",
		Top:      "{layered_runtime: {layers: [" + layers + "]}}",
		Filters:  `[{name: envoy.filters.http.fault, typed_config: ` + withType("type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault", fault) + `}]`,
		Clusters: []proxyCluster{{Name: "up", Port: upPort}},
	}.YAML()
}

var _ = Describe("The fault filter", func() {
	var (
		upPort int
		client = &http.Client{Timeout: 10 * time.Second}
	)
	BeforeEach(func() {
		upPort = namedUpstream("up")
	})
	statuses := func(port, n int, h http.Header) map[int]int {
		GinkgoHelper()
		out := map[int]int{}
		for range n {
			out[httpDo(client, "GET", listenerURL(port, "/"), nil, h).Status]++
		}
		return out
	}

	It("aborts every request at 100%, with Envoy's body and stats, and lets the runtime turn it down with a FractionalPercent value", func() {
		port := freePort()
		s := Start(newDir(), faultBootstrap(port, upPort, "{abort: {http_status: 503, percentage: {numerator: 100}}}", ""))
		r := httpDo(client, "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("fault filter abort"))
		Expect(statuses(port, 4, nil)).To(Equal(map[int]int{503: 4}))
		Expect(statValue(s, "http.faulty.fault.aborts_injected")).To(Equal("5"))

		// Envoy's runtime key, as an integer percentage and then as a
		// FractionalPercent (the form a YAML layer gives as an object).
		Expect(s.Post("/runtime_modify?fault.http.abort.abort_percent=0").Status).To(Equal(200))
		Expect(statuses(port, 4, nil)).To(Equal(map[int]int{200: 4}))
		Expect(s.Post("/runtime_modify?fault.http.abort.abort_percent=" + url.QueryEscape("{numerator: 1000000, denominator: MILLION}")).Status).To(Equal(200))
		Expect(statuses(port, 3, nil)).To(Equal(map[int]int{503: 3}))
	})

	It("reads a FractionalPercent object of a static runtime layer as one value", func() {
		port := freePort()
		s := Start(newDir(), faultBootstrap(port, upPort, "{abort: {http_status: 418, percentage: {numerator: 100}}}",
			"{fault: {http: {abort: {abort_percent: {numerator: 0, denominator: HUNDRED}}}}}"))
		Expect(statuses(port, 5, nil)).To(Equal(map[int]int{200: 5}))
		body := s.Get("/runtime").Body
		Expect(body).To(ContainSubstring(`"fault.http.abort.abort_percent"`))
		Expect(body).To(ContainSubstring(`denominator: HUNDRED\nnumerator: 0`))
	})

	It("delays requests by the fixed delay, and aborts or delays on request headers when configured to", func() {
		port := freePort()
		s := Start(newDir(), faultBootstrap(port, upPort,
			"{delay: {fixed_delay: 0.3s, percentage: {numerator: 100}}, abort: {header_abort: {}, percentage: {numerator: 100}}}", ""))
		t0 := time.Now()
		r := httpDo(client, "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("up "))
		Expect(time.Since(t0)).To(BeNumerically(">=", 300*time.Millisecond), "the request waited for the delay")
		Expect(statValue(s, "http.faulty.fault.delays_injected")).To(Equal("1"))
		// The abort comes from the header.
		r = httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"X-Envoy-Fault-Abort-Request": {"429"}})
		Expect(r.Status).To(Equal(429))
		Expect(statValue(s, "http.faulty.fault.aborts_injected")).To(Equal("1"))
	})

	It("stops injecting beyond max_active_faults and counts the overflow", func() {
		port := freePort()
		s := Start(newDir(), faultBootstrap(port, upPort,
			"{max_active_faults: 1, delay: {fixed_delay: 1s, percentage: {numerator: 100}}}", ""))
		var wg sync.WaitGroup
		results := make([]time.Duration, 3)
		for i := range results {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				t0 := time.Now()
				r := httpDo(&http.Client{Timeout: 10 * time.Second}, "GET", listenerURL(port, "/"), nil, nil)
				Expect(r.Status).To(Equal(200))
				results[i] = time.Since(t0)
			}()
			if i == 0 {
				// The first holds the one fault slot while the others come.
				Eventually(func() string { return statValue(s, "http.faulty.fault.active_faults") }, 5*time.Second).Should(Equal("1"))
			}
		}
		wg.Wait()
		Expect(statValue(s, "http.faulty.fault.delays_injected")).To(Equal("1"))
		Expect(statValue(s, "http.faulty.fault.faults_overflow")).To(Equal("2"))
		Eventually(func() string { return statValue(s, "http.faulty.fault.active_faults") }).Should(Equal("0"), "the faults end with their requests")
	})
})
