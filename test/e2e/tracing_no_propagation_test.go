package e2e

import (
	"encoding/hex"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Tracing no_context_propagation", func() {
	It("reports the spans but writes no trace context into upstream requests; a client's context goes on as it came", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			otelTracing("            random_sampling: {value: 100}\n            no_context_propagation: true\n"), grpcCollectorCluster(cport), "              start_child_span: true"))

		code, _ := tracedGet(port, "/plain", nil)
		Expect(code).To(Equal(200))
		Expect(up.headers("/plain").Get("Traceparent")).To(BeEmpty(), "no context injected")

		incoming := "00-" + incomingTrace + "-" + incomingSpan + "-01"
		code, _ = tracedGet(port, "/joined", http.Header{"Traceparent": {incoming}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/joined").Get("Traceparent")).To(Equal(incoming), "the client's context, untouched")

		// Both requests' spans, and their upstream children, are reported.
		Eventually(collector.received).Should(HaveLen(4))
		child := spanNamed(collector.received(), "router up egress")
		Expect(child).NotTo(BeNil())
		joined := false
		for _, sp := range collector.received() {
			joined = joined || hex.EncodeToString(sp.GetTraceId()) == incomingTrace
		}
		Expect(joined).To(BeTrue(), "the span of the request with a context joins its trace")
	})
})
