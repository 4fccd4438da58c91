package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const killRequestType = "type.googleapis.com/envoy.extensions.filters.http.kill_request.v3.KillRequest"

var _ = Describe("The kill_request filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("lets through requests that do not ask, and crashes the proxy with SIGABRT on one that does", func() {
		port := freePort()
		noKill := `{envoy.filters.http.kill_request: ` + withType(killRequestType, `{probability: {numerator: 0}}`) + `}`
		sc := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      `{stat_prefix: web}`,
			Routes:   `[{match: {prefix: /safe}, route: {cluster: up}, typed_per_filter_config: ` + noKill + `}, {match: {prefix: /}, route: {cluster: up}}]`,
			Filters:  "[" + httpFilter("envoy.filters.http.kill_request", killRequestType, `{probability: {numerator: 100}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML())

		Expect(httpDo(plain, "GET", listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		Expect(httpDo(plain, "GET", listenerURL(port, "/"), nil, http.Header{"X-Envoy-Kill-Request": {"no"}}).Status).To(Equal(200))
		// The route's probability 0 wins over the filter's 100.
		Expect(httpDo(plain, "GET", listenerURL(port, "/safe"), nil, http.Header{"X-Envoy-Kill-Request": {"true"}}).Status).To(Equal(200))
		Expect(sc.Running()).To(BeTrue())

		_, err := plain.Get(listenerURL(port, "/"))
		Expect(err).NotTo(HaveOccurred()) // warm; the next one kills
		req, _ := http.NewRequest("GET", listenerURL(port, "/"), nil)
		req.Header.Set("X-Envoy-Kill-Request", "TRUE")
		_, err = plain.Do(req)
		Expect(err).To(HaveOccurred())                       // the connection dies with the process
		Expect(sc.Wait(10 * time.Second)).To(Equal(128 + 6)) // SIGABRT
		Expect(sc.Stderr()).To(ContainSubstring("assert failure: false. Details: KillRequestFilter is crashing Envoy!!!"))
	})
})
