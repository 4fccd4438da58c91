package e2e

import (
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// withRequestIDExtension gives tracingBootstrap's connection manager a
// request_id_extension with the UUID config's fields given (YAML flow
// fields, may be empty).
func withRequestIDExtension(cfg, fields string) string {
	GinkgoHelper()
	ext := fmt.Sprintf("          request_id_extension:\n            typed_config: {\"@type\": type.googleapis.com/envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig%s}\n          tracing:\n", fields)
	out := strings.Replace(cfg, "          tracing:\n", ext, 1)
	Expect(out).NotTo(Equal(cfg))
	return out
}

var _ = Describe("Request id extension (envoy.request_id.uuid)", func() {
	It("with pack_trace_reason false, neither writes the trace decision into x-request-id nor reads it from there", func() {
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), withRequestIDExtension(tracingBootstrap(port, up.port, "INBOUND",
			"            random_sampling: {value: 100}\n", "", ""), ", pack_trace_reason: false"))

		// Sampled, yet the generated id keeps its version digit 4.
		code, _ := tracedGet(port, "/sampled", nil)
		Expect(code).To(Equal(200))
		Expect(up.headers("/sampled").Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-`))
		// Forced, and the client's id goes on unchanged.
		const id = "0123abcd-0000-4000-8000-000000000000"
		code, _ = tracedGet(port, "/forced", http.Header{"X-Envoy-Force-Trace": {"true"}, "X-Request-Id": {id}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/forced").Get("X-Request-Id")).To(Equal(id))
		Expect(statValue(s, "http.traced.tracing.random_sampling")).To(Equal("1"))
		Expect(statValue(s, "http.traced.tracing.service_forced")).To(Equal("1"))
	})

	It("with pack_trace_reason false, ignores a decision recorded in the client's id", func() {
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), withRequestIDExtension(tracingBootstrap(port, up.port, "INBOUND",
			"            random_sampling: {value: 0}\n", "", ""), ", pack_trace_reason: false"))
		// 'b' records "sampled" in Envoy's packing; here it means
		// nothing, so the request is not traced (0% sampling).
		const id = "0123abcd-0000-b000-8000-000000000000"
		code, _ := tracedGet(port, "/kept", http.Header{"X-Request-Id": {id}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/kept").Get("X-Request-Id")).To(Equal(id))
		Expect(statValue(s, "http.traced.tracing.not_traceable")).To(Equal("1"))
		Expect(statValue(s, "http.traced.tracing.random_sampling")).To(Equal("0"))
	})

	It("by default (an empty UuidRequestIdConfig) packs the decision as without the extension", func() {
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), withRequestIDExtension(tracingBootstrap(port, up.port, "INBOUND",
			"            random_sampling: {value: 100}\n", "", ""), ""))
		code, _ := tracedGet(port, "/sampled", nil)
		Expect(code).To(Equal(200))
		Expect(up.headers("/sampled").Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-b[0-9a-f]{3}-`))
		Expect(statValue(s, "http.traced.tracing.random_sampling")).To(Equal("1"))
	})

	It("with use_request_id_for_trace_sampling false, leaves sampling to the tracer and the id untouched", func() {
		up := startTracedUpstream()
		port := freePort()
		// 0% random sampling would trace nothing by the id; Envoy then
		// counts every request as sampling, the tracer deciding.
		s := Start(newDir(), withRequestIDExtension(tracingBootstrap(port, up.port, "INBOUND",
			"            random_sampling: {value: 0}\n", "", ""), ", use_request_id_for_trace_sampling: false"))
		for i := range 3 {
			code, _ := tracedGet(port, fmt.Sprintf("/r/%d", i), nil)
			Expect(code).To(Equal(200))
		}
		Expect(up.headers("/r/0").Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-`))
		Expect(statValue(s, "http.traced.tracing.random_sampling")).To(Equal("3"))
		Expect(statValue(s, "http.traced.tracing.not_traceable")).To(Equal("0"))
	})

	It("refuses a request_id_extension of another type, and one without typed_config, at load", func() {
		port := freePort()
		base := tracingBootstrap(port, 1, "INBOUND", "            random_sampling: {value: 100}\n", "", "")
		other := strings.Replace(base, "          tracing:\n", `          request_id_extension:
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          tracing:
`, 1)
		res, _ := validate("other-rid.yaml", other)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("request_id_extension.typed_config"))

		empty := strings.Replace(base, "          tracing:\n", "          request_id_extension: {}\n          tracing:\n", 1)
		res, _ = validate("empty-rid.yaml", empty)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("request_id_extension"))
	})
})
