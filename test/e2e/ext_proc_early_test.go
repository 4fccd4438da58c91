package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// earlyProcessor is an external processor for
// send_body_without_waiting_for_header_response. Its answer to the
// request headers waits, on paths with /wait-end, for the request body's
// end, and on paths with /wait-first for the body's first message (the
// "delayed response" the field's documentation describes): without the
// body sent early, such a request would wait for a message timeout. The
// answer sets x-proc-hdr to the number of body messages that came before
// it; then every body message is answered in order with its body
// upper-cased. On paths with /override the headers' answer carries a
// mode_override that skips the response headers. It records the message
// kinds per path, and the protocol_config of the stream's first message.
type earlyProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	mu   sync.Mutex
	seen map[string][]string
}

// record notes a message kind for path.
func (p *earlyProcessor) record(path, kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[path] = append(p.seen[path], kind)
}

// kinds returns the message kinds path got.
func (p *earlyProcessor) kinds(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[path]...)
}

// Process implements the processor's stream.
func (p *earlyProcessor) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	var (
		path    string
		pending bool
		queued  [][]byte
	)
	bodyAnswer := func(b []byte) error {
		return srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestBody{RequestBody: &extprocsvc.BodyResponse{
			Response: &extprocsvc.CommonResponse{BodyMutation: &extprocsvc.BodyMutation{Mutation: &extprocsvc.BodyMutation_Body{Body: bytes.ToUpper(b)}}},
		}}})
	}
	headersAnswer := func() error {
		answer := &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{
			Response: &extprocsvc.CommonResponse{HeaderMutation: &extprocsvc.HeaderMutation{
				SetHeaders: []*corev3.HeaderValueOption{setHeader("x-proc-hdr", fmt.Sprint(len(queued)))},
			}},
		}}}
		if strings.Contains(path, "/never") {
			// Never answered: the message timeout fails the request.
			p.record(path, fmt.Sprintf("headers not answered after %d body messages", len(queued)))
			return nil
		}
		if strings.Contains(path, "/deny") {
			p.record(path, fmt.Sprintf("headers denied after %d body messages", len(queued)))
			return srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
				Body:   []byte("denied with the body seen"),
			}}})
		}
		if strings.Contains(path, "/override") {
			answer.ModeOverride = &extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SKIP}
		}
		p.record(path, fmt.Sprintf("headers answered after %d body messages", len(queued)))
		if err := srv.Send(answer); err != nil {
			return err
		}
		pending = false
		for _, b := range queued {
			if err := bodyAnswer(b); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		switch v := req.GetRequest().(type) {
		case *extprocsvc.ProcessingRequest_RequestHeaders:
			path = headerOf(v.RequestHeaders.GetHeaders(), ":path")
			if pc := req.GetProtocolConfig(); pc != nil {
				p.record(path, fmt.Sprintf("protocol_config(%s,%s,early=%t)", pc.GetRequestBodyMode(), pc.GetResponseBodyMode(), pc.GetSendBodyWithoutWaitingForHeaderResponse()))
			}
			p.record(path, fmt.Sprintf("request_headers(eos=%t)", v.RequestHeaders.GetEndOfStream()))
			if strings.Contains(path, "/wait") {
				pending = true
				continue
			}
			if err := headersAnswer(); err != nil {
				return nil
			}
		case *extprocsvc.ProcessingRequest_RequestBody:
			b := v.RequestBody
			p.record(path, fmt.Sprintf("request_body(%q,eos=%t)", b.GetBody(), b.GetEndOfStream()))
			if !pending {
				if err := bodyAnswer(b.GetBody()); err != nil {
					return nil
				}
				continue
			}
			queued = append(queued, b.GetBody())
			if strings.Contains(path, "/wait-first") || b.GetEndOfStream() {
				if err := headersAnswer(); err != nil {
					return nil
				}
			}
		case *extprocsvc.ProcessingRequest_ResponseHeaders:
			p.record(path, "response_headers")
			if err := srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{
				ResponseHeaders: &extprocsvc.HeadersResponse{},
			}}); err != nil {
				return nil
			}
		}
	}
}

var _ = Describe("The external processing filter sending the body without waiting for the headers' answer", func() {
	var (
		proc    *earlyProcessor
		port    int
		arrived chan string
	)

	BeforeEach(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		proc = &earlyProcessor{seen: map[string][]string{}}
		srv := grpc.NewServer()
		extprocsvc.RegisterExternalProcessorServer(srv, proc)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)

		// The upstream (h2c: an HTTP/1.1 upstream gets the head of an
		// HTTP/2 client's request once the body's next piece came, with
		// or without ext_proc) tells when a request head reaches it,
		// before it reads the body.
		arrived = make(chan string, 16)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived <- r.URL.Path
			b, _ := io.ReadAll(r.Body)
			_, _ = io.WriteString(w, "x-proc-hdr="+r.Header.Get("x-proc-hdr")+"\nbody="+string(b))
		}), true)

		dir := newDir()
		port = freePort()
		spec := proxySpec{
			Port:     port,
			Listener: "{name: early}",
			HCM:      "{stat_prefix: early}",
			Routes:   `[{match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
				"{grpc_service: {envoy_grpc: {cluster_name: proc}}, message_timeout: 2s, allow_mode_override: true, "+
					"send_body_without_waiting_for_header_response: true, processing_mode: {request_body_mode: STREAMED}}") + "]",
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(up), Extra: h2cOptions()},
				{Name: "proc", Port: ln.Addr().(*net.TCPAddr).Port, Extra: h2cOptions()},
			},
		}
		Start(dir, spec.YAML())
	})

	It("sends the whole body to a processor that answers the headers only once it has it", func() {
		for name, client := range httpClients() {
			path := "/wait-end/" + strings.ReplaceAll(name, "/", "")
			r := httpDo(client, "POST", listenerURL(port, path), strings.NewReader("early bird"), nil)
			Expect(r.Status).To(Equal(200), r.Body)
			Expect(r.Body).To(Equal("x-proc-hdr=2\nbody=EARLY BIRD"), name)
			Expect(proc.kinds(path)).To(Equal([]string{
				"protocol_config(STREAMED,NONE,early=true)",
				"request_headers(eos=false)",
				`request_body("early bird",eos=false)`,
				`request_body("",eos=true)`,
				"headers answered after 2 body messages",
				"response_headers",
			}), name)
		}
	})

	It("starts the upstream request once the headers' answer came, while the client still sends the body", func() {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		_, err = io.WriteString(conn, "POST /wait-first/1 HTTP/1.1\r\nHost: example\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"b\r\nfirst piece\r\n")
		Expect(err).NotTo(HaveOccurred())
		// The processor answers the headers after the first piece; the
		// rest of the body is sent only once the upstream has the head.
		Eventually(arrived).WithTimeout(5*time.Second).Should(Receive(Equal("/wait-first/1")), func() string { return strings.Join(proc.kinds("/wait-first/1"), "; ") })
		_, err = io.WriteString(conn, "d\r\n second piece\r\n0\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.SetReadDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200), string(b))
		Expect(string(b)).To(Equal("x-proc-hdr=1\nbody=FIRST PIECE SECOND PIECE"))
		k := proc.kinds("/wait-first/1")
		Expect(k[:4]).To(Equal([]string{
			"protocol_config(STREAMED,NONE,early=true)",
			"request_headers(eos=false)",
			`request_body("first piece",eos=false)`,
			"headers answered after 1 body messages",
		}))
		Expect(k).To(ContainElements(`request_body(" second piece",eos=false)`, `request_body("",eos=true)`))
	})

	It("does the same over HTTP/2, the body's pieces in DATA frames", func() {
		pr, pw := io.Pipe()
		req, err := http.NewRequest("POST", listenerURL(port, "/wait-first/h2"), pr)
		Expect(err).NotTo(HaveOccurred())
		type result struct {
			body string
			code int
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := httpClients()["HTTP/2"].Do(req)
			if err != nil {
				done <- result{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			done <- result{body: string(b), code: resp.StatusCode, err: err}
		}()
		_, err = io.WriteString(pw, "first piece")
		Expect(err).NotTo(HaveOccurred())
		Eventually(arrived).WithTimeout(5*time.Second).Should(Receive(Equal("/wait-first/h2")), func() string { return strings.Join(proc.kinds("/wait-first/h2"), "; ") })
		_, err = io.WriteString(pw, " second piece")
		Expect(err).NotTo(HaveOccurred())
		Expect(pw.Close()).To(Succeed())
		var r result
		Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&r))
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.code).To(Equal(200), r.body)
		Expect(r.body).To(Equal("x-proc-hdr=1\nbody=FIRST PIECE SECOND PIECE"))
		Expect(proc.kinds("/wait-first/h2")[:4]).To(Equal([]string{
			"protocol_config(STREAMED,NONE,early=true)",
			"request_headers(eos=false)",
			`request_body("first piece",eos=false)`,
			"headers answered after 1 body messages",
		}))
	})

	It("answers with the processor's immediate response given once it saw the body, the upstream never reached", func() {
		r := httpDo(httpClients()["HTTP/1.1"], "POST", listenerURL(port, "/wait-end/deny"), strings.NewReader("secret"), nil)
		Expect(r.Status).To(Equal(403), r.Body)
		Expect(r.Body).To(Equal("denied with the body seen"))
		Expect(proc.kinds("/wait-end/deny")).To(ContainElements(`request_body("secret",eos=false)`, "headers denied after 2 body messages"))
		Consistently(arrived).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	})

	It("fails the request with 504 when the headers' answer does not come within message_timeout, the body sent meanwhile", func() {
		r := httpDo(httpClients()["HTTP/1.1"], "POST", listenerURL(port, "/wait-end/never"), strings.NewReader("lost"), nil)
		Expect(r.Status).To(Equal(504), r.Body)
		Expect(proc.kinds("/wait-end/never")).To(ContainElements(`request_body("lost",eos=false)`, "headers not answered after 2 body messages"))
		Consistently(arrived).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	})

	It("ignores the headers' answer's mode_override, as Envoy does with the field", func() {
		r := httpDo(httpClients()["HTTP/1.1"], "POST", listenerURL(port, "/override/1"), strings.NewReader("abc"), nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("x-proc-hdr=0\nbody=ABC"))
		Expect(proc.kinds("/override/1")).To(ContainElement("response_headers"))
	})
})
