package e2e

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Outlier detection: detect_degraded_hosts", func() {
	It("degrades a host whose response carries x-envoy-degraded: traffic goes to the healthy host until the degradation time is over", func() {
		var degrading atomic.Bool
		degrading.Store(true)
		deg := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if degrading.Load() {
				w.Header().Set("x-envoy-degraded", "1")
			}
			_, _ = io.WriteString(w, "deg")
		})
		// Three healthy hosts of four: 75% healthy, times the
		// overprovisioning factor 1.4, carries all the load, so a
		// degraded host gets none (with one of two it would get 30%).
		good := &failingUpstream{name: "good"}
		goodPort, degPort := portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(deg, false))
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Clusters: []proxyCluster{outlierCluster("{detect_degraded_hosts: true, interval: 0.2s, base_ejection_time: 1s}",
				goodPort, portNum(httpTestUpstream(good, false)), portNum(httpTestUpstream(good, false)), degPort)},
		}.YAML())
		s.WaitLive()

		// Round robin: four requests reach every host; the degraded
		// answer still goes to the client.
		bodies := map[string]int{}
		for range 4 {
			status, body := odGet(port)
			Expect(status).To(Equal(200))
			bodies[body]++
		}
		Expect(bodies).To(Equal(map[string]int{"good": 3, "deg": 1}))
		Expect(hostFlags(s, degPort)).To(Equal("/degraded_outlier_detection"))
		Expect(hostFlags(s, goodPort)).To(Equal("healthy"))
		Expect(statValue(s, "cluster.od.membership_degraded")).To(Equal("1"))
		Expect(odStat(s, "ejections_active")).To(Equal("0"), "a degraded host is not ejected")

		// While it is degraded, the healthy host takes every request.
		degrading.Store(false)
		for range 6 {
			_, body := odGet(port)
			Expect(body).To(Equal("good"))
		}

		// Back after base_ejection_time (1s), at the next interval.
		Eventually(func() string { return hostFlags(s, degPort) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
		bodies = map[string]int{}
		for range 8 {
			_, body := odGet(port)
			bodies[body]++
		}
		Expect(bodies).To(Equal(map[string]int{"good": 6, "deg": 2}))
	})
})
