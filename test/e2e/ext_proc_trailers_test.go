package e2e

import (
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The external processing filter on request trailers", func() {
	var (
		proc *extProcessor
		port int
	)

	BeforeEach(func() {
		var procPort int
		proc, procPort = startExtProcessor("first")
		port = freePort()
		const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		route := func(prefix, mode string) string {
			return `{match: {prefix: ` + prefix + `}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
				withType(perRoute, "{overrides: {processing_mode: {request_trailer_mode: SEND"+mode+"}}}") + `}}`
		}
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: rt, http_protocol_options: {enable_trailers: true}}",
			Routes: "[" + strings.Join([]string{
				route("/none", ""),
				route("/streamed", ", request_body_mode: STREAMED"),
				route("/buffered", ", request_body_mode: BUFFERED"),
				route("/deny-trailers", ""),
				`{match: {prefix: /}, route: {cluster: up}}`,
			}, ", ") + "]",
			Filters: "[" + httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
				"{grpc_service: {envoy_grpc: {cluster_name: proc}}, message_timeout: 5s}") + "]",
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(recordingUpstream(true, nil)), Extra: h2cOptions()},
				{Name: "proc", Port: procPort, Extra: h2cOptions()},
			},
		}.YAML())
	})

	// h2 posts body with the trailer x-req-t: v2 over h2c.
	h2 := func(path, body string) (int, recordedRequest) {
		GinkgoHelper()
		req, err := http.NewRequest("POST", listenerURL(port, path), strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Req-T": {"v2"}, "X-Proc-Trailer": nil}
		resp, err := httpClients()["HTTP/2"].Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		return decodeRecorded(resp)
	}
	// h1 sends body chunked over HTTP/1.1 with the trailer x-req-t: v1.
	h1 := func(path, body string) (int, recordedRequest) {
		GinkgoHelper()
		return exchangeRecorded(port, fmt.Sprintf("POST %s HTTP/1.1\r\nhost: example.com\r\ntrailer: x-req-t, x-proc-trailer\r\ntransfer-encoding: chunked\r\n\r\n"+
			"%x\r\n%s\r\n0\r\nx-req-t: v1\r\n\r\n", path, len(body), body))
	}

	It("sends the request trailers after the body and forwards them as the processor changed them", func() {
		status, got := h2("/none/1", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("hello"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "seen-v2"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-proc-trailer", "first"))
		Expect(proc.kinds("/none/1")).To(Equal([]string{"request_headers(,eos=false)", "request_trailers(x-req-t=v2)", "response_headers(:status=200)"}))

		status, got = h1("/none/2", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "seen-v1"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-proc-trailer", "first"))
		Expect(proc.kinds("/none/2")).To(Equal([]string{"request_headers(,eos=false)", "request_trailers(x-req-t=v1)", "response_headers(:status=200)"}))
	})

	It("sends them after a streamed body's pieces, and after a buffered body, which then does not end the stream", func() {
		status, got := h1("/streamed/1", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("HELLO"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "seen-v1"))
		k := proc.kinds("/streamed/1")
		Expect(k).To(ContainElement(`request_body("hello",eos=false)`))
		Expect(k[len(k)-2:]).To(Equal([]string{"request_trailers(x-req-t=v1)", "response_headers(:status=200)"}))

		status, got = h2("/buffered/1", "hello")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("HELLO"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "seen-v2"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-proc-trailer", "first"))
		Expect(proc.kinds("/buffered/1")).To(Equal([]string{"request_headers(,eos=false)", `request_body("hello",eos=false)`,
			"request_trailers(x-req-t=v2)", "response_headers(:status=200)"}))
	})

	It("sends nothing for a request without trailers, and answers with an immediate response to the trailers", func() {
		r := httpDo(httpClients()["HTTP/2"], "POST", listenerURL(port, "/none/plain"), strings.NewReader("no trailers"), nil)
		Expect(r.Status).To(Equal(200))
		Expect(proc.kinds("/none/plain")).To(Equal([]string{"request_headers(,eos=false)", "response_headers(:status=200)"}))

		status, _ := h1raw(port, "/deny-trailers", "x")
		Expect(status).To(Equal(200), "a request without trailers goes on")
		req, err := http.NewRequest("POST", listenerURL(port, "/deny-trailers/1"), strings.NewReader("hello"))
		Expect(err).NotTo(HaveOccurred())
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Req-T": {"v2"}}
		resp, err := httpClients()["HTTP/2"].Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(403))
		Expect(resp.Header.Get("x-blocked")).To(Equal("yes"))
	})
})
