package e2e

import (
	"net/http"
	"strconv"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const admissionControlType = "type.googleapis.com/envoy.extensions.filters.http.admission_control.v3.AdmissionControl"

var _ = Describe("The admission_control filter", func() {
	It("refuses requests while the upstream fails, up to max_rejection_probability, and admits them again once the window has passed", func() {
		var failing atomic.Bool
		failing.Store(true)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("x-upstream", "yes")
			if failing.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}), false)
		port, quiet := freePort(), freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{stat_prefix: web}`,
			Filters: "[" + httpFilter("envoy.filters.http.admission_control", admissionControlType,
				`{success_criteria: {http_criteria: {http_success_status: [{start: 200, end: 300}]}}, sampling_window: 2s,
				  max_rejection_probability: {default_value: {value: 50}, runtime_key: ac.max}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
			More: []proxySpec{{
				Port:     quiet,
				Listener: `{name: quiet}`,
				HCM:      `{stat_prefix: quiet}`,
				// Below rps_threshold nothing is refused.
				Filters: "[" + httpFilter("envoy.filters.http.admission_control", admissionControlType,
					`{success_criteria: {}, rps_threshold: {default_value: 1000000, runtime_key: ac.rps}}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			}},
		}.YAML())

		send := func(port, n int) (upstream, refused int) {
			GinkgoHelper()
			for range n {
				r := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/"), nil, nil)
				Expect(r.Status).To(Equal(503))
				if r.Header.Get("x-upstream") == "yes" {
					upstream++
				} else {
					refused++
				}
			}
			return upstream, refused
		}
		// Once a few failures are in, each request is refused with a
		// probability of 50%: fewer than 20 refusals among 200 has odds
		// below 1e-30.
		_, refused := send(port, 200)
		Expect(refused).To(BeNumerically(">", 20))
		Expect(statValue(s, "http.web.admission_control.rq_rejected")).To(Equal(strconv.Itoa(refused)))

		_, refused = send(quiet, 50)
		Expect(refused).To(BeZero())
		Expect(statValue(s, "http.quiet.admission_control.rq_rejected")).To(Equal("0"))

		failing.Store(false)
		// The failures leave the 2 s window; then every request goes
		// through.
		Eventually(func() int {
			ok := 0
			for range 20 {
				if r := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/"), nil, nil); r.Status == 200 {
					ok++
				}
			}
			return ok
		}, "15s", "200ms").Should(Equal(20))
	})

	It("refuses a success rate threshold below 1% with its path", func() {
		r, _ := validate("b.yaml", proxySpec{
			Port: freePort(),
			Filters: "[" + httpFilter("envoy.filters.http.admission_control", admissionControlType,
				`{success_criteria: {}, sr_threshold: {default_value: {value: 0.5}, runtime_key: ac.sr}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.sr_threshold.default_value: Success rate threshold cannot be less than 1.0%"))
	})
})
