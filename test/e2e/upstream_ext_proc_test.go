package e2e

import (
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The external processing filter upstream", func() {
	plain := &http.Client{Timeout: 10 * time.Second}
	const extProcType = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor"
	const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
	const retry = `retry_policy: {retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}}`

	It("processes each attempt of a retried request on a stream of its own, closed when the attempt ends", func() {
		proc, procPort := startExtProcessor("up")
		rec := &attemptRecorder{failFirst: 1}
		body := &bodyAttempts{failFirst: 1}
		port := freePort()
		sc := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Routes: `[{match: {prefix: /buffered}, route: {cluster: body, ` + retry + `},
				typed_per_filter_config: {envoy.filters.http.ext_proc: ` + withType(perRoute, "{overrides: {processing_mode: {request_body_mode: BUFFERED, response_body_mode: BUFFERED}}}") + `}},
				{match: {prefix: /}, route: {cluster: up, ` + retry + `}}]`,
			Router: `{upstream_http_filters: [` + httpFilter("envoy.filters.http.ext_proc", extProcType,
				`{grpc_service: {envoy_grpc: {cluster_name: proc}}, message_timeout: 5s, stat_prefix: upep}`) + `, ` + upstreamCodec + `]}`,
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(httpTestUpstream(rec, false))},
				{Name: "body", Port: portNum(httpTestUpstream(body, false))},
				{Name: "proc", Port: procPort, Extra: h2cOptions()},
			},
		}.YAML())

		r := httpDo(plain, "GET", listenerURL(port, "/hdr/up"), nil, http.Header{"X-Remove-Me": {"secret"}, "X-Proc-From": {"client"}})
		Expect(r.Status).To(Equal(201), r.Body)
		Expect(r.Header.Get("x-proc-resp")).To(Equal("up"))
		seen := rec.attempts()
		Expect(seen).To(HaveLen(2))
		for i, h := range seen {
			Expect(h.Get("X-Proc-Req")).To(Equal("up"), "attempt %d", i+1)
			Expect(h).NotTo(HaveKey("X-Remove-Me"), "attempt %d", i+1)
		}
		// Each attempt's request head went to the processor; the
		// response of the attempt relayed too.
		Expect(proc.kinds("/hdr/up")).To(Equal([]string{"request_headers(client,eos=true)", "request_headers(client,eos=true)", "response_headers(:status=200)"}))
		// Under the server's scope, as Envoy keeps the router's upstream
		// filters' stats.
		Expect(statValue(sc, "ext_proc.upep.streams_started")).To(Equal("2"))
		Eventually(func() string { return statValue(sc, "ext_proc.upep.streams_closed") }, 5*time.Second, 20*time.Millisecond).Should(Equal("2"))

		// Buffered bodies: each attempt's body is the processor's.
		r = httpDo(plain, "POST", listenerURL(port, "/buffered/up"), strings.NewReader("hello"), nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(body.got()).To(Equal([]string{"HELLO", "HELLO"}))
		Expect(r.Body).To(Equal("HELLO"))
		Expect(r.Header.Get("x-body-len")).To(Equal("5"))
		Expect(proc.kinds("/buffered/up")).To(ContainElements(`request_body("hello",eos=true)`, `response_body("HELLO",eos=true)`))
		Eventually(func() string { return statValue(sc, "ext_proc.upep.streams_closed") }, 5*time.Second, 20*time.Millisecond).Should(Equal("4"))

		// The processor's immediate response answers, with its headers;
		// the upstream sees nothing and nothing is retried.
		r = httpDo(plain, "GET", listenerURL(port, "/immediate/up"), nil, nil)
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("blocked by processor"))
		Expect(r.Header.Get("x-blocked")).To(Equal("yes"))
		Expect(rec.attempts()).To(HaveLen(2))
		Expect(statValue(sc, "ext_proc.upep.streams_started")).To(Equal("5"))
		Expect(statValue(sc, "cluster.up.upstream_rq_retry")).To(Equal("1"))
	})
})
