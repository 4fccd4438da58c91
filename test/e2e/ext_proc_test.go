package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	"google.golang.org/protobuf/types/known/structpb"
)

// extProcessor is an external processor (envoy.service.ext_proc.v3)
// whose answers depend on the request's :path:
//   - /hdr: adds x-proc-req and removes x-remove-me on the request, adds
//     x-proc-resp and sets :status 201 on the response;
//   - /buffered, /streamed: upper-cases the request body and the
//     response body (the routes choose the body modes); a buffered
//     response body's answer also adds x-body-len, which only a held
//     head can still carry;
//   - /immediate: answers 403 itself, with a header and a body;
//   - /system: sets :path (the system header mutation_rules guard);
//   - a path with /deny-body, /deny-trailers or /deny-resp: answers the
//     request body, the request trailers or the response body with an
//     immediate response;
//   - /meta: records the forwarded metadata's team.info owner, and
//     answers with dynamic metadata in proc.out and not.kept;
//   - /cache: adds x-route: b and clears the route cache;
//   - /slow: never answers (until the proxy closes the stream);
//   - /override: answers the request headers with a mode_override that
//     skips the response headers;
//   - anything else: continues unchanged; response trailers get
//     x-proc-trailer, request trailers too, and their x-req-t becomes
//     seen-<value>.
//
// It records, per path, the kinds of messages it got.
type extProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	name string
	mu   sync.Mutex
	seen map[string][]string
}

// record notes a message kind for path.
func (p *extProcessor) record(path, kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[path] = append(p.seen[path], kind)
}

// kinds returns the message kinds path got.
func (p *extProcessor) kinds(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[path]...)
}

// headerOf returns a header of a HeaderMap (raw_value, as Envoy sends).
func headerOf(hm *corev3.HeaderMap, name string) string {
	for _, h := range hm.GetHeaders() {
		if h.GetKey() == name {
			return string(h.GetRawValue())
		}
	}
	return ""
}

// setHeader is a set_headers entry that overwrites.
func setHeader(name, value string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: name, RawValue: []byte(value)},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// Process implements the processor's stream.
func (p *extProcessor) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	path := ""
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		var resp *extprocsvc.ProcessingResponse
		switch v := req.GetRequest().(type) {
		case *extprocsvc.ProcessingRequest_RequestHeaders:
			path = headerOf(v.RequestHeaders.GetHeaders(), ":path")
			if strings.HasPrefix(path, "/meta") {
				owner := req.GetMetadataContext().GetFilterMetadata()["team.info"].GetFields()["owner"].GetStringValue()
				p.record(path, "metadata(owner="+owner+")")
			}
			recordAttributes(p, path, "request", req)
			p.record(path, fmt.Sprintf("request_headers(%s,eos=%t)", headerOf(v.RequestHeaders.GetHeaders(), "x-proc-from"), v.RequestHeaders.GetEndOfStream()))
			resp = p.requestHeaders(path)
		case *extprocsvc.ProcessingRequest_RequestBody:
			recordAttributes(p, path, "request", req)
			p.record(path, fmt.Sprintf("request_body(%q,eos=%t)", v.RequestBody.GetBody(), v.RequestBody.GetEndOfStream()))
			if strings.Contains(path, "/deny-body") {
				resp = denial(413, "body refused")
				break
			}
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestBody{RequestBody: &extprocsvc.BodyResponse{
				Response: &extprocsvc.CommonResponse{BodyMutation: &extprocsvc.BodyMutation{Mutation: &extprocsvc.BodyMutation_Body{Body: bytes.ToUpper(v.RequestBody.GetBody())}}},
			}}}
		case *extprocsvc.ProcessingRequest_ResponseHeaders:
			recordAttributes(p, path, "response", req)
			p.record(path, "response_headers(:status="+headerOf(v.ResponseHeaders.GetHeaders(), ":status")+")")
			cr := &extprocsvc.CommonResponse{}
			if strings.HasPrefix(path, "/hdr") {
				cr.HeaderMutation = &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
					setHeader("x-proc-resp", p.name), setHeader(":status", "201"),
				}}
			}
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvc.HeadersResponse{Response: cr}}}
		case *extprocsvc.ProcessingRequest_ResponseBody:
			recordAttributes(p, path, "response", req)
			body := v.ResponseBody.GetBody()
			p.record(path, fmt.Sprintf("response_body(%q,eos=%t)", body, v.ResponseBody.GetEndOfStream()))
			if strings.Contains(path, "/deny-resp") {
				resp = denial(451, "response refused")
				break
			}
			cr := &extprocsvc.CommonResponse{BodyMutation: &extprocsvc.BodyMutation{Mutation: &extprocsvc.BodyMutation_Body{Body: bytes.ToUpper(body)}}}
			if strings.HasPrefix(path, "/buffered") {
				cr.HeaderMutation = &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-body-len", fmt.Sprint(len(body)))}}
			}
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseBody{ResponseBody: &extprocsvc.BodyResponse{Response: cr}}}
		case *extprocsvc.ProcessingRequest_RequestTrailers:
			recordAttributes(p, path, "request", req)
			got := headerOf(v.RequestTrailers.GetTrailers(), "x-req-t")
			p.record(path, "request_trailers(x-req-t="+got+")")
			if strings.Contains(path, "/deny-trailers") {
				resp = denial(403, "trailers refused")
				break
			}
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocsvc.TrailersResponse{
				HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
					setHeader("x-proc-trailer", p.name), setHeader("x-req-t", "seen-"+got),
				}},
			}}}
		case *extprocsvc.ProcessingRequest_ResponseTrailers:
			recordAttributes(p, path, "response", req)
			p.record(path, "response_trailers(x-up-trailer="+headerOf(v.ResponseTrailers.GetTrailers(), "x-up-trailer")+")")
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocsvc.TrailersResponse{
				HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-proc-trailer", p.name)}},
			}}}
		default:
			p.record(path, "other")
			resp = &extprocsvc.ProcessingResponse{}
		}
		if resp == nil {
			// /slow: no answer until the proxy gives up on the stream.
			select {
			case <-srv.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return nil
		}
		if err := srv.Send(resp); err != nil {
			return nil
		}
	}
}

// denial is an immediate response with status, body and a header.
func denial(status typev3.StatusCode, body string) *extprocsvc.ProcessingResponse {
	return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{
		Status:  &typev3.HttpStatus{Code: status},
		Headers: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-blocked", "yes")}},
		Body:    []byte(body),
	}}}
}

// requestHeaders is the answer to the request headers of path; nil means
// no answer.
func (p *extProcessor) requestHeaders(path string) *extprocsvc.ProcessingResponse {
	cr := &extprocsvc.CommonResponse{}
	answer := &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{Response: cr}}}
	switch {
	case strings.HasPrefix(path, "/hdr"):
		cr.HeaderMutation = &extprocsvc.HeaderMutation{
			SetHeaders:    []*corev3.HeaderValueOption{setHeader("x-proc-req", p.name)},
			RemoveHeaders: []string{"x-remove-me"},
		}
	case strings.HasPrefix(path, "/immediate"):
		return &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocsvc.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
			Headers: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-blocked", "yes")}},
			Body:    []byte("blocked by processor"),
			Details: "blocked by policy",
		}}}
	case strings.HasPrefix(path, "/system"):
		cr.HeaderMutation = &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader(":path", "/rewritten")}}
	case strings.HasPrefix(path, "/slow"):
		return nil
	case strings.HasPrefix(path, "/meta"):
		answer.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{
			"proc.out": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"verdict": structpb.NewStringValue("ok")}}),
			"not.kept": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewStringValue("y")}}),
		}}
	case strings.HasPrefix(path, "/cache"):
		cr.HeaderMutation = &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-route", "b")}}
		cr.ClearRouteCache = true
	case strings.HasPrefix(path, "/override"):
		answer.ModeOverride = &extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SKIP}
	}
	return answer
}

// startExtProcessor serves an external processor on a loopback port until
// the spec ends.
func startExtProcessor(name string) (*extProcessor, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &extProcessor{name: name, seen: map[string][]string{}}
	srv := grpc.NewServer()
	extprocsvc.RegisterExternalProcessorServer(srv, p)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return p, ln.Addr().(*net.TCPAddr).Port
}

// extProcUpstream answers with the request's path, the headers the
// processor edits and the body, one per line, in two writes.
func extProcUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("x-up", "1")
		_, _ = io.WriteString(w, "path="+r.URL.RequestURI()+"\nx-proc-req="+r.Header.Get("x-proc-req")+
			"\nx-remove-me="+r.Header.Get("x-remove-me")+"\n")
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		_, _ = io.WriteString(w, "body="+string(b))
	}), false)
}

// extProcTrailersUpstream is an h2c upstream answering with a body and
// the trailer x-up-trailer.
func extProcTrailersUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Up-Trailer")
		_, _ = io.WriteString(w, "with trailers")
		w.Header().Set("X-Up-Trailer", "t")
	}), true)
}

// extProcListener is a listener on port whose ext_proc filter has the
// fields filterCfg (YAML flow mapping content), with per-route settings:
// /public disabled, /skip skipping both heads, /buffered and /streamed
// with those body modes both ways, /second on the processor at
// secondPort (google_grpc), /trailers sending the response trailers of
// the h2c upstream uph2, which x-route: b also leads to.
func extProcListener(name string, port int, filterCfg, logPath string, secondPort int) proxySpec {
	GinkgoHelper()
	const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
	route := func(prefix, cfg string) string {
		return `{match: {prefix: ` + prefix + `}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` + withType(perRoute, cfg) + `}}`
	}
	accessLog := ""
	if logPath != "" {
		accessLog = ", access_log: [" + fileLog(logPath, "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% verdict=%DYNAMIC_METADATA(proc.out:verdict)% other=%DYNAMIC_METADATA(not.kept:x)%\n") + "]"
	}
	return proxySpec{
		Port:     port,
		Listener: "{name: " + name + "}",
		HCM:      "{stat_prefix: " + name + accessLog + "}",
		Routes: "[" + strings.Join([]string{
			`{match: {prefix: /, headers: [{name: x-route, string_match: {exact: b}}]}, route: {cluster: uph2}}`,
			route("/public", "{disabled: true}"),
			route("/skip", "{overrides: {processing_mode: {request_header_mode: SKIP, response_header_mode: SKIP}}}"),
			route("/buffered", "{overrides: {processing_mode: {request_body_mode: BUFFERED, response_body_mode: BUFFERED}}}"),
			route("/streamed", "{overrides: {processing_mode: {request_body_mode: STREAMED, response_body_mode: STREAMED}}}"),
			`{match: {prefix: /trailers}, route: {cluster: uph2}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
				withType(perRoute, "{overrides: {processing_mode: {response_trailer_mode: SEND}}}") + `}}`,
			route("/second", fmt.Sprintf("{overrides: {grpc_service: {google_grpc: {target_uri: '127.0.0.1:%d', stat_prefix: second}}}}", secondPort)),
			`{match: {prefix: /}, route: {cluster: up}}`,
		}, ", ") + "]",
		Filters: "[" + httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor", "{"+filterCfg+"}") + "]",
	}
}

var _ = Describe("The external processing filter", func() {
	var (
		client = &http.Client{Timeout: 10 * time.Second}
		do     = func(method string, port int, path, body string, header http.Header) Response {
			GinkgoHelper()
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			return httpDo(client, method, listenerURL(port, path), rd, header)
		}
		proc, second                                     *extProcessor
		sc                                               *Sidecar
		port, strictPort, fmaPort, downPort, downFMAPort int
		mutePort                                         int
		logPath                                          string
		procPort, secondPort                             int
	)

	BeforeEach(func() {
		proc, procPort = startExtProcessor("first")
		second, secondPort = startExtProcessor("second")
		dir := newDir()
		logPath = filepath.Join(dir, "access.log")
		port, strictPort, fmaPort, downPort, downFMAPort = freePort(), freePort(), freePort(), freePort(), freePort()
		mutePort = freePort()
		// A processor that accepts connections and never speaks: the
		// gRPC channel never becomes ready.
		mute, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		var held []net.Conn
		var heldMu sync.Mutex
		go func() {
			for {
				c, err := mute.Accept()
				if err != nil {
					return
				}
				heldMu.Lock()
				held = append(held, c)
				heldMu.Unlock()
			}
		}()
		DeferCleanup(func() {
			_ = mute.Close()
			heldMu.Lock()
			defer heldMu.Unlock()
			for _, c := range held {
				_ = c.Close()
			}
		})
		const svc = "grpc_service: {envoy_grpc: {cluster_name: proc}}, "
		const dead = "grpc_service: {envoy_grpc: {cluster_name: dead}}, "
		spec := extProcListener("main", port, svc+"message_timeout: 5s, stat_prefix: ep, allow_mode_override: true, "+
			"metadata_options: {forwarding_namespaces: {untyped: [team.info]}, receiving_namespaces: {untyped: [proc.out]}}", logPath, secondPort)
		// Dynamic metadata for the filter to forward.
		spec.Filters = "[" + httpFilter("envoy.filters.http.set_metadata", setMetadataType,
			`{metadata: [{metadata_namespace: team.info, value: {owner: payments}}]}`) + ", " + strings.TrimPrefix(spec.Filters, "[")
		spec.Clusters = []proxyCluster{
			{Name: "up", Port: portNum(extProcUpstream())},
			{Name: "uph2", Port: portNum(extProcTrailersUpstream()), Extra: h2cOptions()},
			{Name: "proc", Port: procPort, Extra: h2cOptions()},
			// Nothing listens there: the processor is down.
			{Name: "dead", Port: freePort(), Extra: h2cOptions()},
			{Name: "mute", Port: mute.Addr().(*net.TCPAddr).Port, Extra: h2cOptions()},
		}
		spec.More = []proxySpec{
			extProcListener("strict", strictPort, svc+"message_timeout: 1s, mutation_rules: {disallow_system: true, disallow_is_error: true}", "", secondPort),
			extProcListener("fma", fmaPort, svc+"message_timeout: 1s, failure_mode_allow: true, mutation_rules: {disallow_system: true}", "", secondPort),
			extProcListener("down", downPort, dead+"message_timeout: 5s", "", secondPort),
			extProcListener("downfma", downFMAPort, dead+"message_timeout: 5s, failure_mode_allow: true", "", secondPort),
			extProcListener("mute", mutePort, "grpc_service: {envoy_grpc: {cluster_name: mute}}, message_timeout: 1s", "", secondPort),
		}
		sc = Start(dir, spec.YAML(), "--file-flush-interval-msec", "100")
	})

	It("mutates request and response headers, :status included", func() {
		r := do("GET", port, "/hdr/1", "", http.Header{"X-Remove-Me": {"secret"}, "X-Proc-From": {"client"}})
		Expect(r.Status).To(Equal(201), r.Body)
		Expect(r.Body).To(ContainSubstring("x-proc-req=first\n"))
		Expect(r.Body).To(ContainSubstring("x-remove-me=\n"))
		Expect(r.Header.Get("x-proc-resp")).To(Equal("first"))
		Expect(r.Header.Get("x-up")).To(Equal("1"))
		Expect(proc.kinds("/hdr/1")).To(Equal([]string{"request_headers(client,eos=true)", "response_headers(:status=200)"}))
		Expect(statValue(sc, "http.main.ext_proc.ep.streams_started")).To(Equal("1"))
		Expect(statValue(sc, "http.main.ext_proc.ep.stream_msgs_sent")).To(Equal("2"))
		Expect(statValue(sc, "http.main.ext_proc.ep.stream_msgs_received")).To(Equal("2"))
		Eventually(func() string { return statValue(sc, "http.main.ext_proc.ep.streams_closed") }).Should(Equal("1"))
	})

	It("rewrites a buffered request body and a buffered response body, whose answer still edits the head", func() {
		r := do("POST", port, "/buffered/1", "hello processor", nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("PATH=/BUFFERED/1\nX-PROC-REQ=\nX-REMOVE-ME=\nBODY=HELLO PROCESSOR"))
		Expect(r.Header.Get("x-body-len")).To(Equal(fmt.Sprint(len("path=/buffered/1\nx-proc-req=\nx-remove-me=\nbody=HELLO PROCESSOR"))))
		Expect(proc.kinds("/buffered/1")).To(ContainElements(`request_body("hello processor",eos=true)`,
			`response_body("path=/buffered/1\nx-proc-req=\nx-remove-me=\nbody=HELLO PROCESSOR",eos=true)`))

		// The same over HTTP/2, whose held head leaves as a HEADERS frame.
		r = httpDo(httpClients()["HTTP/2"], "POST", listenerURL(port, "/buffered/h2"), strings.NewReader("over h2"), nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("PATH=/BUFFERED/H2\nX-PROC-REQ=\nX-REMOVE-ME=\nBODY=OVER H2"))
		Expect(r.Header.Get("x-body-len")).To(Equal(fmt.Sprint(len(r.Body))))
	})

	It("streams request and response bodies through the processor piece by piece", func() {
		r := do("POST", port, "/streamed/1", "stream me", nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("PATH=/STREAMED/1\nX-PROC-REQ=\nX-REMOVE-ME=\nBODY=STREAM ME"))
		k := proc.kinds("/streamed/1")
		Expect(k).To(ContainElement(`request_body("",eos=true)`), "the body's end comes as its own message")
		Expect(k).To(ContainElement(`response_body("",eos=true)`))
		Expect(k[0]).To(Equal("request_headers(,eos=false)"))
	})

	It("sends the response trailers and applies the processor's trailer mutations", func() {
		resp, err := httpClients()["HTTP/2"].Get(listenerURL(port, "/trailers/1"))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal("with trailers"))
		Expect(resp.Trailer.Get("x-up-trailer")).To(Equal("t"))
		Expect(resp.Trailer.Get("x-proc-trailer")).To(Equal("first"))
		Expect(proc.kinds("/trailers/1")).To(Equal([]string{"request_headers(,eos=true)", "response_headers(:status=200)", "response_trailers(x-up-trailer=t)"}))
	})

	It("forwards the metadata_options namespaces and keeps the receiving ones", func() {
		Expect(do("GET", port, "/meta/1", "", nil).Status).To(Equal(200))
		Expect(proc.kinds("/meta/1")).To(ContainElement("metadata(owner=payments)"))
		Eventually(func() string { b, _ := os.ReadFile(logPath); return string(b) }).
			Should(ContainSubstring("/meta/1 200 via_upstream verdict=ok other=-\n"))
	})

	It("routes again when the processor clears the route cache with a header mutation", func() {
		r := do("GET", port, "/cache/1", "", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("with trailers"), "the request went to the x-route: b route")
	})

	It("answers with the processor's immediate response", func() {
		r := do("GET", port, "/immediate/1", "", nil)
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("blocked by processor"))
		Expect(r.Header.Get("x-blocked")).To(Equal("yes"))
		Eventually(func() string { b, _ := os.ReadFile(logPath); return string(b) }).
			Should(ContainSubstring("/immediate/1 403 blocked_by_policy verdict=- other=-\n"))
	})

	It("answers with an immediate response from a body phase: a streamed request body, or a buffered response body whose head was held", func() {
		r := do("POST", port, "/streamed/deny-body", "no thanks", nil)
		Expect(r.Status).To(Equal(413))
		Expect(r.Body).To(Equal("body refused"))
		Expect(r.Header.Get("x-blocked")).To(Equal("yes"))

		r = do("GET", port, "/buffered/deny-resp", "", nil)
		Expect(r.Status).To(Equal(451))
		Expect(r.Body).To(Equal("response refused"))
		Expect(r.Header.Get("x-blocked")).To(Equal("yes"))
		Expect(r.Header.Get("x-up")).To(BeEmpty(), "the upstream's headers were replaced")
	})

	It("skips what the route's processing mode skips, and a mode_override skips the rest", func() {
		Expect(do("GET", port, "/skip/1", "", nil).Status).To(Equal(200))
		Expect(proc.kinds("/skip/1")).To(BeEmpty())
		Expect(do("GET", port, "/override/1", "", nil).Status).To(Equal(200))
		Expect(proc.kinds("/override/1")).To(Equal([]string{"request_headers(,eos=true)"}))
	})

	It("obeys per-route disabling and grpc_service overrides", func() {
		Expect(do("GET", port, "/public/1", "", nil).Status).To(Equal(200))
		Expect(do("GET", port, "/public/1", "", nil).Status).To(Equal(200))
		Expect(proc.kinds("/public/1")).To(BeEmpty())
		Expect(statValue(sc, "http.main.ext_proc.ep.streams_started")).To(Equal("0"))

		r := do("GET", port, "/second/hdr", "", nil)
		Expect(r.Status).To(Equal(200))
		Expect(second.kinds("/second/hdr")).To(HaveLen(2))
		Expect(proc.kinds("/second/hdr")).To(BeEmpty())
	})

	It("ignores a system header mutation that mutation_rules refuse, or fails the request with disallow_is_error", func() {
		r := do("GET", fmaPort, "/system/1", "", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("path=/system/1\n"), "the :path mutation was ignored")
		Expect(statValue(sc, "http.fma.ext_proc.rejected_header_mutations")).To(Equal("1"))

		r = do("GET", strictPort, "/system/2", "", nil)
		Expect(r.Status).To(Equal(500))
		Expect(statValue(sc, "http.strict.ext_proc.rejected_header_mutations")).To(Equal("1"))

		// Without disallow_system, :path is the processor's to change.
		r = do("GET", port, "/system/3", "", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("path=/rewritten\n"))
	})

	It("answers 504 when the processor does not answer in time, or goes on with failure_mode_allow", func() {
		Expect(do("GET", strictPort, "/slow/1", "", nil).Status).To(Equal(504))
		Expect(statValue(sc, "http.strict.ext_proc.message_timeouts")).To(Equal("1"))

		r := do("GET", fmaPort, "/slow/2", "", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("path=/slow/2\n"))
		Expect(statValue(sc, "http.fma.ext_proc.message_timeouts")).To(Equal("1"))
		Expect(statValue(sc, "http.fma.ext_proc.failure_mode_allowed")).To(Equal("1"))

		// A processor that cannot be reached in time is a message
		// timeout too.
		Expect(do("GET", mutePort, "/hdr/mute", "", nil).Status).To(Equal(504))
		Expect(statValue(sc, "http.mute.ext_proc.message_timeouts")).To(Equal("1"))
	})

	It("answers 500 when the processor is down, or goes on with failure_mode_allow", func() {
		Expect(do("GET", downPort, "/hdr/down", "", nil).Status).To(Equal(500))
		Expect(statValue(sc, "http.down.ext_proc.streams_failed")).To(Equal("1"))

		r := do("GET", downFMAPort, "/hdr/down", "", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(ContainSubstring("x-proc-req=\n"))
		Expect(statValue(sc, "http.downfma.ext_proc.streams_failed")).To(Equal("1"))
		Expect(statValue(sc, "http.downfma.ext_proc.failure_mode_allowed")).To(Equal("1"))
	})

	It("is refused at load with the path of a field it does not implement", func() {
		spec := extProcListener("bad", freePort(), "grpc_service: {envoy_grpc: {cluster_name: proc}}, metadata_options: {receiving_namespaces: {typed: [ns]}}", "", secondPort)
		spec.Clusters = []proxyCluster{{Name: "up", Port: 1}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		res, _ := validate("bad.yaml", spec.YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("http_filters[0].typed_config.metadata_options.receiving_namespaces.typed"))
	})
})
