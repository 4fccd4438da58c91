package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// duplexProcessor is an external processor for FULL_DUPLEX_STREAMED
// bodies (request and response alike), whose answers depend on the
// request's :path:
//   - /upper: each piece comes back upper-cased, as one piece;
//   - /split: each piece comes back upper-cased in pieces of at most 3
//     bytes (more pieces than it got);
//   - /whole: the pieces are held and come back upper-cased as one piece
//     at the body's end (fewer pieces than it got);
//   - /slow: as /upper, each answer 400 ms late (past the default
//     message_timeout of 200 ms);
//   - /deny: the first piece is answered with a 403 immediate response;
//   - /plain: the first piece gets a body mutation that is not a
//     streamed_response (spurious in this mode).
//
// Trailers are answered with x-req-t: seen-<value> (request) or
// x-proc-trailer: duplex (response). It records per path the messages it
// got, as kind(len,eos).
type duplexProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	mu   sync.Mutex
	seen map[string][]string
}

func (p *duplexProcessor) record(path, kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[path] = append(p.seen[path], kind)
}

func (p *duplexProcessor) kinds(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[path]...)
}

// streamed is a body answer with a streamed_response.
func streamed(request bool, body []byte, eos bool) *extprocsvc.ProcessingResponse {
	br := &extprocsvc.BodyResponse{Response: &extprocsvc.CommonResponse{BodyMutation: &extprocsvc.BodyMutation{
		Mutation: &extprocsvc.BodyMutation_StreamedResponse{StreamedResponse: &extprocsvc.StreamedBodyResponse{Body: body, EndOfStream: eos}},
	}}}
	if request {
		return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestBody{RequestBody: br}}
	}
	return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseBody{ResponseBody: br}}
}

// Process implements the processor's stream.
func (p *duplexProcessor) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	path := ""
	var held []byte
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		var out []*extprocsvc.ProcessingResponse
		var body *extprocsvc.HttpBody
		request := false
		switch v := req.GetRequest().(type) {
		case *extprocsvc.ProcessingRequest_RequestHeaders:
			path = headerOf(v.RequestHeaders.GetHeaders(), ":path")
			p.record(path, fmt.Sprintf("request_headers(modes=%s/%s)", req.GetProtocolConfig().GetRequestBodyMode(), req.GetProtocolConfig().GetResponseBodyMode()))
			out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{}}})
		case *extprocsvc.ProcessingRequest_ResponseHeaders:
			p.record(path, "response_headers")
			out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvc.HeadersResponse{}}})
		case *extprocsvc.ProcessingRequest_RequestBody:
			body, request = v.RequestBody, true
		case *extprocsvc.ProcessingRequest_ResponseBody:
			body = v.ResponseBody
		case *extprocsvc.ProcessingRequest_RequestTrailers:
			got := headerOf(v.RequestTrailers.GetTrailers(), "x-req-t")
			p.record(path, "request_trailers(x-req-t="+got+")")
			if strings.HasPrefix(path, "/whole") {
				out = append(out, streamed(true, bytes.ToUpper(held), false))
				held = nil
			}
			out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocsvc.TrailersResponse{
				HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-req-t", "seen-"+got)}},
			}}})
		case *extprocsvc.ProcessingRequest_ResponseTrailers:
			p.record(path, "response_trailers(x-up-trailer="+headerOf(v.ResponseTrailers.GetTrailers(), "x-up-trailer")+")")
			if strings.HasPrefix(path, "/whole") {
				out = append(out, streamed(false, bytes.ToUpper(held), false))
				held = nil
			}
			out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocsvc.TrailersResponse{
				HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-proc-trailer", "duplex")}},
			}}})
		}
		if body != nil {
			kind := "response_body"
			if request {
				kind = "request_body"
			}
			p.record(path, fmt.Sprintf("%s(%d,eos=%t)", kind, len(body.GetBody()), body.GetEndOfStream()))
			b, eos := bytes.ToUpper(body.GetBody()), body.GetEndOfStream()
			switch {
			case strings.HasPrefix(path, "/split"):
				for len(b) > 3 {
					out = append(out, streamed(request, b[:3], false))
					b = b[3:]
				}
				out = append(out, streamed(request, b, eos))
			case strings.HasPrefix(path, "/whole"):
				held = append(held, body.GetBody()...)
				if eos {
					out = append(out, streamed(request, bytes.ToUpper(held), true))
				}
			case strings.HasPrefix(path, "/slow"):
				time.Sleep(400 * time.Millisecond)
				out = append(out, streamed(request, b, eos))
			case strings.HasPrefix(path, "/deny"):
				out = append(out, denial(typev3.StatusCode_Forbidden, "duplex refused"))
			case strings.HasPrefix(path, "/plain"):
				br := &extprocsvc.BodyResponse{Response: &extprocsvc.CommonResponse{BodyMutation: &extprocsvc.BodyMutation{Mutation: &extprocsvc.BodyMutation_Body{Body: b}}}}
				out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestBody{RequestBody: br}})
			default:
				out = append(out, streamed(request, b, eos))
			}
		}
		for _, r := range out {
			if err := srv.Send(r); err != nil {
				return nil
			}
		}
	}
}

// startDuplexProcessor serves a duplexProcessor until the spec ends.
func startDuplexProcessor() (*duplexProcessor, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &duplexProcessor{seen: map[string][]string{}}
	srv := grpc.NewServer()
	extprocsvc.RegisterExternalProcessorServer(srv, p)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return p, ln.Addr().(*net.TCPAddr).Port
}

// duplexResponseUpstream answers with the body the request's x-size
// says (that many bytes of "abcdefghij" repeated; "part1" and "part2"
// without it, the second only once gate is closed or after 5 s, noting
// in late whether it waited that long), and the trailer x-up-trailer on
// h2c when the path has "trailers".
func duplexResponseUpstream(gate <-chan struct{}, late chan<- bool) string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "trailers") {
			w.Header().Set("Trailer", "X-Up-Trailer")
		}
		var n int
		if _, err := fmt.Sscan(r.Header.Get("x-size"), &n); err == nil {
			_, _ = io.WriteString(w, strings.Repeat("abcdefghij", n/10))
		} else {
			_, _ = io.WriteString(w, "part1")
			w.(http.Flusher).Flush()
			select {
			case <-gate:
				late <- false
			case <-time.After(5 * time.Second):
				late <- true
			}
			_, _ = io.WriteString(w, "part2")
		}
		if strings.Contains(r.URL.Path, "trailers") {
			w.Header().Set("X-Up-Trailer", "t")
		}
	}), true)
}

var _ = Describe("The external processing filter in FULL_DUPLEX_STREAMED mode", func() {
	var (
		proc  *duplexProcessor
		sc    *Sidecar
		port  int
		first chan string
		gate  chan struct{}
		late  chan bool
	)

	BeforeEach(func() {
		var procPort int
		proc, procPort = startDuplexProcessor()
		port = freePort()
		first, gate, late = make(chan string, 1), make(chan struct{}), make(chan bool, 1)
		const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		resp := func(prefix string) string {
			return `{match: {prefix: /resp` + prefix + `}, route: {cluster: down}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
				withType(perRoute, "{overrides: {processing_mode: {response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}}}") + `}}`
		}
		sc = Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: fdx, http_protocol_options: {enable_trailers: true}}",
			Routes: "[" + strings.Join([]string{
				`{match: {prefix: /upper/resp}, route: {cluster: down}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
					withType(perRoute, "{overrides: {processing_mode: {response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}}}") + `}}`,
				`{match: {prefix: /split/resp}, route: {cluster: down}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
					withType(perRoute, "{overrides: {processing_mode: {response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}}}") + `}}`,
				`{match: {prefix: /whole/resp}, route: {cluster: down}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
					withType(perRoute, "{overrides: {processing_mode: {response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}}}") + `}}`,
				resp(""),
				`{match: {prefix: /}, route: {cluster: rec}}`,
			}, ", ") + "]",
			Filters: "[" + httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
				"{grpc_service: {envoy_grpc: {cluster_name: proc}}, processing_mode: {request_body_mode: FULL_DUPLEX_STREAMED, request_trailer_mode: SEND}}") + "]",
			Clusters: []proxyCluster{
				{Name: "rec", Port: portNum(recordingUpstream(true, first)), Extra: h2cOptions()},
				{Name: "down", Port: portNum(duplexResponseUpstream(gate, late)), Extra: h2cOptions()},
				{Name: "proc", Port: procPort, Extra: h2cOptions()},
			},
		}.YAML())
	})

	post := func(path, body string) (int, recordedRequest) {
		GinkgoHelper()
		resp, err := http.Post(listenerURL(port, path), "text/plain", strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		return decodeRecorded(resp)
	}

	It("replaces the request body with the processor's pieces, whether it answers with as many, more or fewer", func() {
		for _, path := range []string{"/upper/1", "/split/1", "/whole/1"} {
			status, got := post(path, "hello duplex")
			Expect(status).To(Equal(200), path)
			Expect(got.Body).To(Equal("HELLO DUPLEX"), path)
			Expect(got.Header).NotTo(HaveKey("content-length"), "the length is the new body's: %s", path)
			kinds := proc.kinds(path)
			Expect(kinds[0]).To(Equal("request_headers(modes=FULL_DUPLEX_STREAMED/NONE)"))
			Expect(kinds).To(ContainElement(MatchRegexp(`^request_body\(\d+,eos=true\)$`)), "%s: %v", path, kinds)
		}
	})

	It("waits for a slow processor beyond message_timeout, which does not apply to the body", func() {
		status, got := post("/slow/1", "take your time")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal("TAKE YOUR TIME"))
	})

	It("forwards a processed piece upstream before the client sends the next one", func() {
		pr, pw := io.Pipe()
		done := make(chan Response, 1)
		go func() {
			defer GinkgoRecover()
			req, _ := http.NewRequest("POST", listenerURL(port, "/upper/pipe"), pr)
			req.ContentLength = -1
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- Response{}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- Response{Status: resp.StatusCode, Body: string(b)}
		}()
		_, err := io.WriteString(pw, "piece one;")
		Expect(err).NotTo(HaveOccurred())
		Eventually(first, 5*time.Second).Should(Receive(Equal("PIECE ONE;")), "the upstream got the first piece, processed, while the client still holds the rest")
		_, _ = io.WriteString(pw, "piece two")
		Expect(pw.Close()).To(Succeed())
		var r Response
		Eventually(done, 10*time.Second).Should(Receive(&r))
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(ContainSubstring(`"body":"PIECE ONE;PIECE TWO"`))
	})

	It("streams a request body larger than the buffer limit through the processor", func() {
		body := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
		status, got := post("/upper/big", body)
		Expect(status).To(Equal(200))
		Expect(len(got.Body)).To(Equal(len(body)))
		Expect(got.Body == strings.ToUpper(body)).To(BeTrue(), "the body came back whole and in order")
	})

	It("sends the request trailers after the pieces and ends the body with their answer", func() {
		req, err := http.NewRequest("POST", listenerURL(port, "/whole/trailers"), strings.NewReader("with trailers"))
		Expect(err).NotTo(HaveOccurred())
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Req-T": {"v2"}}
		resp, err := httpClients()["HTTP/2"].Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		status, got := decodeRecorded(resp)
		Expect(status).To(Equal(200), "%v", proc.kinds("/whole/trailers"))
		Expect(got.Body).To(Equal("WITH TRAILERS"))
		Expect(got.Trailers).To(HaveKeyWithValue("x-req-t", "seen-v2"))
		kinds := proc.kinds("/whole/trailers")
		Expect(kinds).To(ContainElement("request_trailers(x-req-t=v2)"))
		Expect(kinds).NotTo(ContainElement(MatchRegexp(`request_body\(\d+,eos=true\)`)), "the trailers end the body: %v", kinds)
	})

	It("answers an immediate response during the body, and fails a body answer that is not a streamed_response", func() {
		resp, err := http.Post(listenerURL(port, "/deny/1"), "text/plain", strings.NewReader("no"))
		Expect(err).NotTo(HaveOccurred())
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(403))
		Expect(string(b)).To(Equal("duplex refused"))
		Expect(resp.Header.Get("x-blocked")).To(Equal("yes"))

		// A spurious answer ends processing, and the body with it, as
		// Envoy drops what it gave the processor.
		status, got := post("/plain/1", "abc")
		Expect(status).To(Equal(200))
		Expect(got.Body).To(Equal(""))
		Expect(statValue(sc, "http.fdx.ext_proc.spurious_msgs_received")).To(Equal("1"))
	})

	It("replaces the response body with the processor's pieces, emitted as they come, trailers included", func() {
		resp, err := http.Get(listenerURL(port, "/resp/stream"))
		Expect(err).NotTo(HaveOccurred())
		buf := make([]byte, 5)
		_, err = io.ReadFull(resp.Body, buf)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(buf)).To(Equal("PART1"), "the processed first piece reached the client while the upstream holds the second")
		close(gate)
		rest, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(rest)).To(Equal("PART2"))
		Expect(<-late).To(BeFalse(), "the upstream was released by the client having read the first piece")

		for _, path := range []string{"/split/resp/trailers", "/whole/resp/trailers"} {
			req, _ := http.NewRequest("GET", listenerURL(port, path), nil)
			req.Header.Set("x-size", "100000")
			resp, err := httpClients()["HTTP/2"].Do(req)
			Expect(err).NotTo(HaveOccurred())
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(string(b) == strings.ToUpper(strings.Repeat("abcdefghij", 10000))).To(BeTrue(), "%s: %d bytes", path, len(b))
			Expect(resp.Trailer.Get("x-proc-trailer")).To(Equal("duplex"), path)
			Expect(resp.Trailer.Get("x-up-trailer")).To(Equal("t"), path)
			Expect(proc.kinds(path)).To(ContainElement("response_trailers(x-up-trailer=t)"))
		}
	})

	It("streams a response body larger than the buffer limit", func() {
		req, _ := http.NewRequest("GET", listenerURL(port, "/upper/resp/big"), nil)
		req.Header.Set("x-size", fmt.Sprint(3<<20/10*10))
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(len(b)).To(Equal(3 << 20 / 10 * 10))
		Expect(string(b) == strings.ToUpper(strings.Repeat("abcdefghij", (3<<20)/10))).To(BeTrue())
	})

	It("is refused at load without the trailer mode SEND or with failure_mode_allow, with Envoy's messages", func() {
		for cfg, want := range map[string]string{
			"processing_mode: {request_body_mode: FULL_DUPLEX_STREAMED}":                                                       "If the ext_proc filter has the request_body_mode set to FULL_DUPLEX_STREAMED, then the request_trailer_mode has to be set to SEND",
			"processing_mode: {response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SKIP}":                         "If the ext_proc filter has the response_body_mode set to FULL_DUPLEX_STREAMED, then the response_trailer_mode has to be set to SEND",
			"failure_mode_allow: true, processing_mode: {request_body_mode: FULL_DUPLEX_STREAMED, request_trailer_mode: SEND}": "then the failure_mode_allow has to be left as false",
		} {
			spec := proxySpec{
				Port:     freePort(),
				HCM:      "{stat_prefix: bad}",
				Routes:   `[{match: {prefix: /}, route: {cluster: up}}]`,
				Filters:  "[" + httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor", "{grpc_service: {envoy_grpc: {cluster_name: up}}, "+cfg+"}") + "]",
				Clusters: []proxyCluster{{Name: "up", Port: 1}},
			}
			res, _ := validate("bad.yaml", spec.YAML())
			Expect(res.ExitCode).NotTo(Equal(0))
			Expect(res.Stderr+res.Stdout).To(ContainSubstring(want), cfg)
		}
	})
})
