package e2e

import (
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Dynamic forward proxy DNS cache runtime", func() {
	It("takes the pending requests' limit from the runtime key dns_cache.<name>.circuit_breakers over max_pending_requests", func() {
		silent := startDNSServer()
		silent.silent.Store(true)
		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port := freePort()
		cache := dfpCache("rt", silent.port, ", dns_query_timeout: 2s, dns_cache_circuit_breaker: {max_pending_requests: 1}")
		b := bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp", "x", logPath)},
			[]string{dfpCluster("dfp", cache, "")})
		b = strings.TrimSuffix(b, "}") + ", layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}"
		s := Start(dir, b, "--file-flush-interval-msec", "50")

		Expect(s.Post("/runtime_modify?dns_cache.rt.circuit_breakers=2").Status).To(Equal(200))

		By("two requests wait for the DNS at once, where max_pending_requests alone lets one")
		done := make(chan int, 2)
		for _, host := range []string{"one.test", "two.test"} {
			go func() {
				defer GinkgoRecover()
				code, _ := dfpRequest(port, host, "/")
				done <- code
			}()
		}
		Eventually(func() string { return statValue(s, "dns_cache.rt.circuit_breakers.rq_pending_open") }).Should(Equal("1"))
		Expect(statValue(s, "dns_cache.rt.circuit_breakers.rq_pending_remaining")).To(Equal("0"))
		Expect(statValue(s, "dns_cache.rt.dns_rq_pending_overflow")).To(Equal("0"))

		By("a third is refused")
		code, body := dfpRequest(port, "three.test", "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("Dynamic forward proxy pending request overflow"))
		Expect(statValue(s, "dns_cache.rt.dns_rq_pending_overflow")).To(Equal("1"))
		for range 2 {
			Eventually(done, 10*time.Second).Should(Receive(Equal(503)))
		}

		By("without the key, max_pending_requests applies again")
		Expect(s.Post("/runtime_modify?dns_cache.rt.circuit_breakers=").Status).To(Equal(200))
		first := make(chan int, 1)
		go func() {
			defer GinkgoRecover()
			code, _ := dfpRequest(port, "four.test", "/")
			first <- code
		}()
		Eventually(func() string { return statValue(s, "dns_cache.rt.circuit_breakers.rq_pending_open") }).Should(Equal("1"))
		code, _ = dfpRequest(port, "five.test", "/")
		Expect(code).To(Equal(503))
		Expect(statValue(s, "dns_cache.rt.dns_rq_pending_overflow")).To(Equal("2"))
		Eventually(first, 10*time.Second).Should(Receive(Equal(503)))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^five.test 503 - dynamic_forward_proxy_pending_request_overflow$`))
	})
})
