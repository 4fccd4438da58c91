package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// holdProcessor is a FULL_DUPLEX_STREAMED processor that may hold a
// whole message before it answers its headers, as the mode allows. By
// the request's :path:
//   - with "/hold" (and not "/resp"): the request headers' answer (which
//     sets x-held: request) waits until the request body has ended; the
//     body comes back upper-cased in pieces of at most 64 KiB, after it;
//   - with "/hold" and "/resp": the same for the response (x-resp-held:
//     yes);
//   - with "/deny": the held request is answered with a 403 immediate
//     response instead of its headers' answer;
//   - with "/cl": as "/hold", and the request headers' answer sets
//     content-length to the new body's length ("/cl/wrong": one less);
//     the response's headers answer does the same for the response;
//   - otherwise each piece comes back upper-cased at once.
//
// It records per path the messages it got, in order, as kind(len,eos).
type holdProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	mu   sync.Mutex
	seen map[string][]string
}

func (p *holdProcessor) record(path, kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[path] = append(p.seen[path], kind)
}

func (p *holdProcessor) kinds(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[path]...)
}

// headAnswer is a headers answer setting the headers given (name, value
// pairs).
func headAnswer(request bool, kv ...string) *extprocsvc.ProcessingResponse {
	hm := &extprocsvc.HeaderMutation{}
	for i := 0; i+1 < len(kv); i += 2 {
		hm.SetHeaders = append(hm.SetHeaders, setHeader(kv[i], kv[i+1]))
	}
	hr := &extprocsvc.HeadersResponse{Response: &extprocsvc.CommonResponse{HeaderMutation: hm}}
	if request {
		return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: hr}}
	}
	return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{ResponseHeaders: hr}}
}

// Process implements the processor's stream.
func (p *holdProcessor) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	path := ""
	// held[0] is the request's held body, held[1] the response's;
	// holding says whether that direction's headers' answer waits.
	var held [2][]byte
	var holding [2]bool
	send := func(rs ...*extprocsvc.ProcessingResponse) error {
		for _, r := range rs {
			if err := srv.Send(r); err != nil {
				return err
			}
		}
		return nil
	}
	// flush answers a held direction: its headers, then its body.
	flush := func(dir int, eos bool) error {
		request := dir == 0
		holding[dir] = false
		body := bytes.ToUpper(held[dir])
		held[dir] = nil
		if request && strings.Contains(path, "/deny") {
			return send(denial(typev3.StatusCode_Forbidden, "held and refused"))
		}
		kv := []string{"x-held", "request"}
		if !request {
			kv = []string{"x-resp-held", "yes"}
		}
		if strings.Contains(path, "/cl") {
			n := len(body)
			if strings.Contains(path, "/wrong") {
				n--
			}
			kv = append(kv, "content-length", fmt.Sprint(n))
		}
		out := []*extprocsvc.ProcessingResponse{headAnswer(request, kv...)}
		for len(body) > 64<<10 {
			out = append(out, streamed(request, body[:64<<10], false))
			body = body[64<<10:]
		}
		out = append(out, streamed(request, body, eos))
		return send(out...)
	}
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		var out []*extprocsvc.ProcessingResponse
		switch v := req.GetRequest().(type) {
		case *extprocsvc.ProcessingRequest_RequestHeaders:
			path = headerOf(v.RequestHeaders.GetHeaders(), ":path")
			p.record(path, "request_headers(content-length="+headerOf(v.RequestHeaders.GetHeaders(), "content-length")+")")
			if strings.Contains(path, "/hold") && !strings.Contains(path, "/resp") {
				holding[0] = true
			} else {
				out = append(out, headAnswer(true))
			}
		case *extprocsvc.ProcessingRequest_ResponseHeaders:
			p.record(path, "response_headers")
			if strings.Contains(path, "/hold") && strings.Contains(path, "/resp") {
				holding[1] = true
			} else {
				out = append(out, headAnswer(false))
			}
		case *extprocsvc.ProcessingRequest_RequestBody, *extprocsvc.ProcessingRequest_ResponseBody:
			dir, b := 0, req.GetRequestBody()
			if b == nil {
				dir, b = 1, req.GetResponseBody()
			}
			kind := [2]string{"request_body", "response_body"}[dir]
			p.record(path, fmt.Sprintf("%s(%d,eos=%t)", kind, len(b.GetBody()), b.GetEndOfStream()))
			if holding[dir] {
				held[dir] = append(held[dir], b.GetBody()...)
				if b.GetEndOfStream() {
					if err := flush(dir, true); err != nil {
						return nil
					}
				}
				continue
			}
			out = append(out, streamed(dir == 0, bytes.ToUpper(b.GetBody()), b.GetEndOfStream()))
		case *extprocsvc.ProcessingRequest_RequestTrailers:
			p.record(path, "request_trailers")
			if holding[0] {
				if err := flush(0, false); err != nil {
					return nil
				}
			}
			out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocsvc.TrailersResponse{}}})
		case *extprocsvc.ProcessingRequest_ResponseTrailers:
			p.record(path, "response_trailers")
			if holding[1] {
				if err := flush(1, false); err != nil {
					return nil
				}
			}
			out = append(out, &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocsvc.TrailersResponse{}}})
		}
		if send(out...) != nil {
			return nil
		}
	}
}

// startHoldProcessor serves a holdProcessor until the spec ends.
func startHoldProcessor() (*holdProcessor, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &holdProcessor{seen: map[string][]string{}}
	srv := grpc.NewServer()
	extprocsvc.RegisterExternalProcessorServer(srv, p)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return p, ln.Addr().(*net.TCPAddr).Port
}

// echoFirstUpstream answers at once with "early;" (flushed) before it
// reads the request body, then with "echo:" and the body it read.
func echoFirstUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "early;")
		w.(http.Flusher).Flush()
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "echo:"+string(b))
	}), true)
}

// lengthUpstream answers with the request's framing and body:
// "cl=<content-length, -1 for none> body=<body>".
func lengthUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(599)
			return
		}
		_, _ = fmt.Fprintf(w, "cl=%d body=%s", r.ContentLength, b)
	}), true)
}

// sizedUpstream answers with x-size bytes of "abcdefghij" repeated.
func sizedUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		_, _ = fmt.Sscan(r.Header.Get("x-size"), &n)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, strings.Repeat("abcdefghij", n/10))
	}), true)
}

var _ = Describe("The external processing filter in FULL_DUPLEX_STREAMED mode with a processor that holds the message", func() {
	var (
		proc *holdProcessor
		port int
	)
	const (
		extProcType = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor"
		perRoute    = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		bothModes   = "{request_body_mode: FULL_DUPLEX_STREAMED, request_trailer_mode: SEND, response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}"
	)

	start := func(filterExtra string) {
		var procPort int
		proc, procPort = startHoldProcessor()
		port = freePort()
		route := func(prefix, cluster, modes string) string {
			return `{match: {prefix: ` + prefix + `}, route: {cluster: ` + cluster + `}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
				withType(perRoute, "{overrides: {processing_mode: "+modes+"}}") + `}}`
		}
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: fdxh}",
			Routes: "[" + strings.Join([]string{
				route("/hold/resp", "sized", "{response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}"),
				route("/hold/cl/resp", "sized", "{response_body_mode: FULL_DUPLEX_STREAMED, response_trailer_mode: SEND}"),
				route("/both", "echo", bothModes),
				`{match: {prefix: /hold/cl}, route: {cluster: length}}`,
				`{match: {prefix: /keep}, route: {cluster: length}}`,
				`{match: {prefix: /}, route: {cluster: rec}}`,
			}, ", ") + "]",
			Filters: "[" + httpFilter("envoy.filters.http.ext_proc", extProcType,
				"{grpc_service: {envoy_grpc: {cluster_name: proc}}, message_timeout: 0.5s"+filterExtra+", processing_mode: {request_body_mode: FULL_DUPLEX_STREAMED, request_trailer_mode: SEND}}") + "]",
			Clusters: []proxyCluster{
				{Name: "rec", Port: portNum(recordingUpstream(true, nil)), Extra: h2cOptions()},
				{Name: "echo", Port: portNum(echoFirstUpstream()), Extra: h2cOptions()},
				{Name: "sized", Port: portNum(sizedUpstream()), Extra: h2cOptions()},
				{Name: "length", Port: portNum(lengthUpstream()), Extra: h2cOptions()},
				{Name: "proc", Port: procPort, Extra: h2cOptions()},
			},
		}.YAML())
	}

	post := func(path, body string) (int, recordedRequest) {
		GinkgoHelper()
		resp, err := http.Post(listenerURL(port, path), "text/plain", strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		return decodeRecorded(resp)
	}

	Context("by default", func() {
		BeforeEach(func() { start("") })

		It("sends the request body while the headers' answer is awaited, beyond message_timeout, and applies both", func() {
			for _, size := range []int{12, 3 << 20} {
				body := strings.Repeat("held body ", size/10+1)[:size]
				path := fmt.Sprintf("/hold/%d", size)
				status, got := post(path, body)
				Expect(status).To(Equal(200), path)
				Expect(got.Header).To(HaveKeyWithValue("x-held", "request"), path)
				Expect(len(got.Body)).To(Equal(size), path)
				Expect(got.Body == strings.ToUpper(body)).To(BeTrue(), "%s: the processor's pieces, in order", path)
				Expect(got.Header).NotTo(HaveKey("content-length"), "the new body's length is its own: %s", path)
				kinds := proc.kinds(path)
				Expect(kinds[0]).To(Equal(fmt.Sprintf("request_headers(content-length=%d)", size)))
				Expect(kinds).To(ContainElement(MatchRegexp(`^request_body\(\d+,eos=true\)$`)), path)
			}
		})

		It("answers the held request with the processor's immediate response", func() {
			resp, err := http.Post(listenerURL(port, "/hold/deny"), "text/plain", strings.NewReader("not this one"))
			Expect(err).NotTo(HaveOccurred())
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(403))
			Expect(string(b)).To(Equal("held and refused"))
		})

		It("sends the response body while the response headers' answer is awaited, the head held until it applies", func() {
			for _, size := range []int{100, 3 << 20} {
				req, _ := http.NewRequest("GET", listenerURL(port, "/hold/resp"), nil)
				req.Header.Set("x-size", fmt.Sprint(size))
				resp, err := http.DefaultClient.Do(req)
				Expect(err).NotTo(HaveOccurred())
				b, err := io.ReadAll(resp.Body)
				Expect(err).NotTo(HaveOccurred())
				resp.Body.Close()
				Expect(resp.StatusCode).To(Equal(200))
				Expect(resp.Header.Get("x-resp-held")).To(Equal("yes"), "the headers' answer applied to the held head")
				Expect(len(b)).To(Equal(size / 10 * 10))
				Expect(string(b) == strings.ToUpper(strings.Repeat("abcdefghij", size/10))).To(BeTrue())
			}
		})

		It("sends the response's messages at once, interleaved with the request body's", func() {
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", listenerURL(port, "/both"), pr)
			req.ContentLength = -1
			type result struct {
				resp *http.Response
				err  error
			}
			got := make(chan result, 1)
			go func() {
				resp, err := httpClients()["HTTP/2"].Do(req)
				got <- result{resp, err}
			}()
			_, err := io.WriteString(pw, "first-piece;")
			Expect(err).NotTo(HaveOccurred())
			var r result
			Eventually(got, 5*time.Second).Should(Receive(&r))
			Expect(r.err).NotTo(HaveOccurred())
			defer r.resp.Body.Close()
			early := make([]byte, len("EARLY;"))
			_, err = io.ReadFull(r.resp.Body, early)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(early)).To(Equal("EARLY;"), "the response's first piece was processed while the request body still streams")
			_, _ = io.WriteString(pw, "second")
			Expect(pw.Close()).To(Succeed())
			rest, err := io.ReadAll(r.resp.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(rest)).To(Equal("ECHO:FIRST-PIECE;SECOND"), "both bodies went through the processor whole")
			kinds := proc.kinds("/both")
			Expect(kinds).To(ContainElement("response_headers"))
			Expect(indexMatching(kinds, `^request_body\(6,`)).To(BeNumerically(">", indexMatching(kinds, `^response_headers$`)),
				"the response headers went before the request body's second piece: %v", kinds)
		})
	})

	Context("with allow_content_length_header", func() {
		BeforeEach(func() { start(", allow_content_length_header: true") })

		postFor := func(path, body string) (int, string, error) {
			resp, err := http.Post(listenerURL(port, path), "text/plain", strings.NewReader(body))
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), err
		}

		It("sends the request body with the content-length the processor set, and keeps the client's when it sets none", func() {
			status, body, err := postFor("/hold/cl/1", "shorter or longer")
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("cl=17 body=SHORTER OR LONGER"))

			status, body, err = postFor("/keep/1", "same length")
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("cl=11 body=SAME LENGTH"), "the processor answered piece by piece, the client's length kept")
		})

		It("fails a request body whose length disagrees with the processor's content-length rather than send it", func() {
			status, body, err := postFor("/hold/cl/wrong", "one byte too many")
			if err == nil {
				Expect(status).NotTo(Equal(200), body)
				Expect(body).NotTo(ContainSubstring("cl="), "the upstream never got a whole body")
			}
		})

		It("sends the response with the content-length the processor set, and cuts one that disagrees", func() {
			req, _ := http.NewRequest("GET", listenerURL(port, "/hold/cl/resp"), nil)
			req.Header.Set("x-size", "100000")
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.ContentLength).To(Equal(int64(100000)))
			Expect(len(b)).To(Equal(100000))
			Expect(resp.Header.Get("x-resp-held")).To(Equal("yes"))

			req, _ = http.NewRequest("GET", listenerURL(port, "/hold/cl/resp/wrong"), nil)
			req.Header.Set("x-size", "100000")
			resp, err = http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.ContentLength).To(Equal(int64(99999)))
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(err).To(HaveOccurred(), "the body was cut short of its announced length (%d bytes)", len(b))
		})
	})
})

// indexMatching is the index of the first element of ss that re
// matches, -1 for none.
func indexMatching(ss []string, re string) int {
	r := regexp.MustCompile(re)
	for i, x := range ss {
		if r.MatchString(x) {
			return i
		}
	}
	return -1
}
