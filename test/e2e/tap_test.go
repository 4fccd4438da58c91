package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// tapBootstrap is a listener on port with two tap filters before the
// router: one configured for /tap (config id "debug"), one static that
// writes the requests carrying x-file to files under prefix, in format,
// with the output_config fields in extra (", streaming: true"). Its
// runtime has an admin layer, for tap_enabled's runtime keys.
func tapBootstrap(port int, up, prefix, format, extra string) string {
	GinkgoHelper()
	return tapBootstrapWith(port, up, prefix, format, extra, "")
}

// tapBootstrapWith is tapBootstrap with more fields of the static tap's
// TapConfig in static ("tap_enabled: {...}, ").
func tapBootstrapWith(port int, up, prefix, format, extra, static string) string {
	GinkgoHelper()
	const tapType = "type.googleapis.com/envoy.extensions.filters.http.tap.v3.Tap"
	return proxySpec{
		Port:   port,
		HCM:    "{stat_prefix: web}",
		Top:    "{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}",
		Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: "[" + httpFilter("envoy.filters.http.tap", tapType, `{common_config: {admin_config: {config_id: debug}}}`) + ", " +
			httpFilter("tap-static", tapType, `{common_config: {static_config: {`+static+`
				match: {http_request_headers_match: {headers: [{name: x-file, string_match: {exact: "yes"}}]}},
				output_config: {sinks: [{format: `+format+`, file_per_tap: {path_prefix: "`+prefix+`"}}]`+extra+`}}}}`) + "]",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
	}.YAML()
}

// tapTrace is the part of a TraceWrapper the specs read.
type tapTrace struct {
	HTTPBufferedTrace struct {
		Request  tapMessage `json:"request"`
		Response tapMessage `json:"response"`
	} `json:"http_buffered_trace"`
	Segment *tapSegment `json:"http_streamed_trace_segment"`
	// SampleRate is configured_sample_rate: tap_enabled's default value.
	SampleRate *struct {
		Numerator   int    `json:"numerator"`
		Denominator string `json:"denominator"`
	} `json:"configured_sample_rate"`
}

type tapMessage struct {
	Headers  []struct{ Key, Value string } `json:"headers"`
	Body     *tapBody                      `json:"body"`
	Trailers []struct{ Key, Value string } `json:"trailers"`
}

type tapBody struct {
	AsBytes   string `json:"as_bytes"`
	AsString  string `json:"as_string"`
	Truncated bool   `json:"truncated"`
}

// tapSegment is an http_streamed_trace_segment: one part of a streamed
// trace.
type tapSegment struct {
	TraceID           string      `json:"trace_id"`
	RequestHeaders    *tapMessage `json:"request_headers"`
	RequestBodyChunk  *tapBody    `json:"request_body_chunk"`
	RequestTrailers   *tapMessage `json:"request_trailers"`
	ResponseHeaders   *tapMessage `json:"response_headers"`
	ResponseBodyChunk *tapBody    `json:"response_body_chunk"`
	ResponseTrailers  *tapMessage `json:"response_trailers"`
}

// part names the segment's part.
func (s *tapSegment) part() string {
	switch {
	case s == nil:
		return "none"
	case s.RequestHeaders != nil:
		return "request_headers"
	case s.RequestBodyChunk != nil:
		return "request_body_chunk"
	case s.RequestTrailers != nil:
		return "request_trailers"
	case s.ResponseHeaders != nil:
		return "response_headers"
	case s.ResponseBodyChunk != nil:
		return "response_body_chunk"
	case s.ResponseTrailers != nil:
		return "response_trailers"
	}
	return "empty"
}

func (m tapMessage) header(name string) string {
	for _, h := range m.Headers {
		if h.Key == name {
			return h.Value
		}
	}
	return ""
}

// tapStream is an attached /tap: the traces decoded from the open
// response as they arrive.
type tapStream struct {
	traces chan tapTrace
	cancel context.CancelFunc
}

// attachTap posts body to /tap and, on 200, decodes the traces of the
// open response in the background; otherwise it returns the answer.
func attachTap(sc *Sidecar, body string) (*tapStream, int, string) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+sc.Admin+"/tap", strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, resp.StatusCode, string(b)
	}
	ts := &tapStream{traces: make(chan tapTrace, 16), cancel: cancel}
	go func() {
		defer GinkgoRecover()
		defer resp.Body.Close()
		defer close(ts.traces)
		dec := json.NewDecoder(resp.Body)
		for {
			var t tapTrace
			if dec.Decode(&t) != nil {
				return
			}
			ts.traces <- t
		}
	}()
	DeferCleanup(cancel)
	return ts, resp.StatusCode, ""
}

// next is the next trace, failing the spec if none comes.
func (ts *tapStream) next() tapTrace {
	GinkgoHelper()
	var t tapTrace
	Eventually(ts.traces, 10*time.Second).Should(Receive(&t))
	return t
}

const tapRequest = `{config_id: debug, tap_config: {
  match: {http_request_headers_match: {headers: [{name: x-tap, string_match: {exact: "yes"}}]}},
  output_config: {sinks: [{streaming_admin: {}}], max_buffered_tx_bytes: 5}}}`

var _ = Describe("The tap filter", func() {
	var (
		sc     *Sidecar
		up     string
		port   int
		prefix string
		plain  = &http.Client{Timeout: 5 * time.Second}
	)

	BeforeEach(func() {
		up = httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("x-upstream", "yes")
			_, _ = io.WriteString(w, "echo:"+string(b))
		}), false)
		port = freePort()
		prefix = filepath.Join(newDir(), "trace")
		sc = Start(newDir(), tapBootstrap(port, up, prefix, "JSON_BODY_AS_STRING", ""))
	})

	send := func(body string, header ...string) Response {
		GinkgoHelper()
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Add(header[i], header[i+1])
		}
		return httpDo(plain, http.MethodPost, listenerURL(port, "/api"), strings.NewReader(body), h)
	}

	It("streams one trace per matched request to the attached /tap, and detaches when the client goes", func() {
		Expect(sc.Get("/help").Body).To(ContainSubstring("/tap"))
		ts, code, msg := attachTap(sc, tapRequest)
		Expect(code).To(Equal(200), msg)

		Expect(send("skipped").Status).To(Equal(200))
		r := send("hello", "x-tap", "yes")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("echo:hello"))

		t := ts.next()
		req, resp := t.HTTPBufferedTrace.Request, t.HTTPBufferedTrace.Response
		Expect(req.header(":method")).To(Equal("POST"))
		Expect(req.header(":path")).To(Equal("/api"))
		Expect(req.header("x-tap")).To(Equal("yes"))
		Expect(req.Body).NotTo(BeNil())
		raw, err := base64.StdEncoding.DecodeString(req.Body.AsBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(Equal("hello"))
		Expect(req.Body.Truncated).To(BeFalse())
		Expect(resp.header(":status")).To(Equal("200"))
		Expect(resp.header("x-upstream")).To(Equal("yes"))
		// max_buffered_tx_bytes: 5 keeps "echo:" of "echo:hello".
		raw, err = base64.StdEncoding.DecodeString(resp.Body.AsBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(Equal("echo:"))
		Expect(resp.Body.Truncated).To(BeTrue())
		Consistently(ts.traces, 300*time.Millisecond).ShouldNot(Receive(), "the unmatched request was traced")

		By("refusing a second stream while one is attached")
		r = sc.Do(http.MethodPost, "/tap", strings.NewReader(tapRequest), nil)
		Expect(r.Status).To(Equal(400))
		Expect(r.Body).To(Equal("An attached /tap admin stream already exists. Detach it."))

		By("detaching when the client closes the stream")
		ts.cancel()
		Eventually(func() int {
			ts2, code, _ := attachTap(sc, tapRequest)
			if ts2 != nil {
				ts2.cancel()
			}
			return code
		}, 10*time.Second, 100*time.Millisecond).Should(Equal(200))
	})

	It("answers 400 with a message for an unknown config id, a bad body and no body", func() {
		_, code, msg := attachTap(sc, strings.Replace(tapRequest, "debug", "nope", 1))
		Expect(code).To(Equal(400))
		Expect(msg).To(Equal("Unknown config id 'nope'. No extension has registered with this id."))

		_, code, msg = attachTap(sc, `{config_id: debug, tap_config: {bogus: 1}}`)
		Expect(code).To(Equal(400))
		Expect(msg).To(ContainSubstring("bogus"))

		_, code, msg = attachTap(sc, `{config_id: debug, tap_config: {tap_enabled: {runtime_key: k}, match: {any_match: true}, output_config: {sinks: [{streaming_admin: {}}]}}}`)
		Expect(code).To(Equal(400))
		Expect(msg).To(Equal("tap_config.tap_enabled.default_value: required"))

		_, code, msg = attachTap(sc, "")
		Expect(code).To(Equal(400))
		Expect(msg).To(Equal("/tap requires a JSON/YAML body"))
	})

	It("writes one file per traced request with a static file_per_tap sink", func() {
		Expect(send("one", "x-file", "yes").Status).To(Equal(200))
		Expect(send("not traced").Status).To(Equal(200))
		Expect(send("two", "x-file", "yes").Status).To(Equal(200))
		// A file is created before its trace is written into it: wait
		// until both hold a whole trace.
		var bodies []string
		Eventually(func(g Gomega) {
			files, _ := filepath.Glob(prefix + "_*.json")
			g.Expect(files).To(HaveLen(2))
			bodies = nil
			for _, f := range files {
				b, err := os.ReadFile(f)
				g.Expect(err).NotTo(HaveOccurred())
				var t tapTrace
				g.Expect(json.Unmarshal(b, &t)).To(Succeed())
				g.Expect(t.HTTPBufferedTrace.Response.Body.AsString).To(HavePrefix("echo:"))
				bodies = append(bodies, t.HTTPBufferedTrace.Request.Body.AsString)
			}
		}, 10*time.Second).Should(Succeed())
		Expect(bodies).To(ConsistOf("one", "two"))
		Expect(httpStat(sc, "http.web.tap.rq_tapped")).To(Equal("2"))
	})

	It("streams http_streamed_trace_segment messages to /tap with output_config.streaming", func() {
		ts, code, msg := attachTap(sc, `{config_id: debug, tap_config: {
		  match: {http_response_headers_match: {headers: [{name: x-upstream, string_match: {exact: "yes"}}]}},
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}], streaming: true}}}`)
		Expect(code).To(Equal(200), msg)
		Expect(send("hello").Body).To(Equal("echo:hello"))

		// The match holds at the response headers: the request's parts,
		// held until then, come first, the body as one chunk.
		s := ts.next().Segment
		Expect(s.part()).To(Equal("request_headers"))
		Expect(s.RequestHeaders.header(":path")).To(Equal("/api"))
		id := s.TraceID
		Expect(id).NotTo(BeEmpty())
		s = ts.next().Segment
		Expect(s.part()).To(Equal("request_body_chunk"))
		Expect(s.RequestBodyChunk.AsString).To(Equal("hello"))
		s = ts.next().Segment
		Expect(s.part()).To(Equal("response_headers"))
		Expect(s.ResponseHeaders.header(":status")).To(Equal("200"))
		Expect(s.TraceID).To(Equal(id))
		// Then each response body chunk as it passes.
		var body string
		for i := 0; i < 10 && body != "echo:hello"; i++ {
			s = ts.next().Segment
			Expect(s.part()).To(Equal("response_body_chunk"))
			Expect(s.TraceID).To(Equal(id))
			body += s.ResponseBodyChunk.AsString
		}
		Expect(body).To(Equal("echo:hello"))
		Eventually(func() string { return httpStat(sc, "http.web.tap.rq_tapped") }, 5*time.Second).Should(Equal("1"))
	})

	It("matches request trailers and traces them, buffered and streamed", func() {
		// Over h2c, the request body ends with the trailer x-checksum
		// (none when checksum is "").
		sendTrailer := func(body, checksum string) {
			GinkgoHelper()
			req, err := http.NewRequest(http.MethodPost, listenerURL(port, "/api"), strings.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			req.ContentLength = -1
			if checksum != "" {
				req.Trailer = http.Header{"X-Checksum": {checksum}}
			}
			resp, err := httpClients()["HTTP/2"].Do(req)
			Expect(err).NotTo(HaveOccurred())
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			Expect(string(b)).To(Equal("echo:" + body))
		}
		const match = `match: {http_request_trailers_match: {headers: [{name: x-checksum, string_match: {exact: c1}}]}}`
		ts, code, msg := attachTap(sc, `{config_id: debug, tap_config: {`+match+`,
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}]}}}`)
		Expect(code).To(Equal(200), msg)
		sendTrailer("no trailers", "")
		sendTrailer("another checksum", "c2")
		sendTrailer("hello", "c1")
		t := ts.next()
		Expect(t.HTTPBufferedTrace.Request.Body.AsString).To(Equal("hello"))
		Expect(t.HTTPBufferedTrace.Request.Trailers).To(ConsistOf(HaveField("Key", "x-checksum")))
		Expect(t.HTTPBufferedTrace.Request.Trailers[0].Value).To(Equal("c1"))
		Expect(t.SampleRate).To(BeNil(), "configured_sample_rate without tap_enabled")
		Consistently(ts.traces, 300*time.Millisecond).ShouldNot(Receive(), "a request without the trailer was traced")
		ts.cancel()

		By("streaming: the segments start when the trailers match, in Envoy's order")
		Eventually(func() int {
			ts, code, _ = attachTap(sc, `{config_id: debug, tap_config: {`+match+`,
			  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}], streaming: true}}}`)
			return code
		}, 10*time.Second, 100*time.Millisecond).Should(Equal(200))
		sendTrailer("another checksum", "c2")
		sendTrailer("world", "c1")
		var parts []string
		for len(parts) < 4 {
			parts = append(parts, ts.next().Segment.part())
		}
		Expect(parts).To(Equal([]string{"request_headers", "request_body_chunk", "request_trailers", "response_headers"}))
	})

	It("taps only the share of requests that tap_enabled gives, which its runtime key overrides", func() {
		ts, code, msg := attachTap(sc, `{config_id: debug, tap_config: {
		  tap_enabled: {default_value: {numerator: 100}, runtime_key: tap.debug.enabled},
		  match: {any_match: true},
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}]}}}`)
		Expect(code).To(Equal(200), msg)
		Expect(send("first").Status).To(Equal(200))
		t := ts.next()
		Expect(t.HTTPBufferedTrace.Request.Body.AsString).To(Equal("first"))
		// The configured rate: the default value, whatever the runtime says.
		Expect(t.SampleRate).NotTo(BeNil())
		Expect(t.SampleRate.Numerator).To(Equal(100))
		Expect(t.SampleRate.Denominator).To(Equal("HUNDRED"))

		Expect(sc.Post("/runtime_modify?tap.debug.enabled=0").Status).To(Equal(200))
		for i := range 5 {
			Expect(send(fmt.Sprint("skipped ", i)).Status).To(Equal(200))
		}
		Consistently(ts.traces, 300*time.Millisecond).ShouldNot(Receive(), "a request outside the share was traced")
		Expect(httpStat(sc, "http.web.tap.rq_tapped")).To(Equal("1"))

		Expect(sc.Post("/runtime_modify?tap.debug.enabled=100").Status).To(Equal(200))
		Expect(send("again").Status).To(Equal(200))
		Expect(ts.next().HTTPBufferedTrace.Request.Body.AsString).To(Equal("again"))

		By("a static tap whose share is 0% writes no file")
		port2 := freePort()
		prefix2 := filepath.Join(newDir(), "none")
		sc2 := Start(newDir(), tapBootstrapWith(port2, up, prefix2, "JSON_BODY_AS_STRING", "", "tap_enabled: {default_value: {numerator: 0}},"))
		for i := range 5 {
			r := httpDo(plain, http.MethodPost, listenerURL(port2, "/api"), strings.NewReader(fmt.Sprint(i)), http.Header{"X-File": {"yes"}})
			Expect(r.Status).To(Equal(200))
		}
		Consistently(func() []string {
			files, _ := filepath.Glob(prefix2 + "_*")
			return files
		}, 300*time.Millisecond).Should(BeEmpty())
		Expect(httpStat(sc2, "http.web.tap.rq_tapped")).To(Equal("0"))
	})

	It("traces the requests whose bodies hold the generic body match's patterns", func() {
		ts, code, msg := attachTap(sc, `{config_id: debug, tap_config: {
		  match: {and_match: {rules: [
		    {http_request_generic_body_match: {patterns: [{string_match: "nee"}, {binary_match: "ZGxl"}]}},
		    {http_response_generic_body_match: {bytes_limit: 16, patterns: [{string_match: "echo:"}]}}]}},
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}]}}}`)
		Expect(code).To(Equal(200), msg)
		Expect(send("hay").Status).To(Equal(200))
		Expect(send("a needle").Status).To(Equal(200))
		t := ts.next()
		Expect(t.HTTPBufferedTrace.Request.Body.AsString).To(Equal("a needle"))
		Consistently(ts.traces, 300*time.Millisecond).ShouldNot(Receive(), "the request without the patterns was traced")
	})

	It("writes a streamed trace to one file in PROTO_BINARY_LENGTH_DELIMITED", func() {
		port2 := freePort()
		prefix2 := filepath.Join(newDir(), "seg")
		Start(newDir(), tapBootstrap(port2, up, prefix2, "PROTO_BINARY_LENGTH_DELIMITED", ", streaming: true, max_buffered_rx_bytes: 3"))
		h := http.Header{"X-File": {"yes"}}
		Expect(httpDo(plain, http.MethodPost, listenerURL(port2, "/api"), strings.NewReader("hello"), h).Body).To(Equal("echo:hello"))

		// Read the file's segments until the response body is complete.
		var segs []*datatapv3.HttpStreamedTraceSegment
		var name string
		Eventually(func(g Gomega) {
			files, _ := filepath.Glob(prefix2 + "_*.pb_length_delimited")
			g.Expect(files).To(HaveLen(1))
			name = files[0]
			b, err := os.ReadFile(name)
			g.Expect(err).NotTo(HaveOccurred())
			segs = nil
			body := ""
			for len(b) > 0 {
				size, n := protowire.ConsumeVarint(b)
				g.Expect(n).To(BeNumerically(">", 0))
				g.Expect(uint64(len(b) - n)).To(BeNumerically(">=", size))
				var w datatapv3.TraceWrapper
				g.Expect(proto.Unmarshal(b[n:n+int(size)], &w)).To(Succeed())
				segs = append(segs, w.GetHttpStreamedTraceSegment())
				body += string(w.GetHttpStreamedTraceSegment().GetResponseBodyChunk().GetAsBytes())
				b = b[n+int(size):]
			}
			g.Expect(body).To(Equal("echo:hello"))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

		Expect(len(segs)).To(BeNumerically(">=", 4))
		for _, s := range segs {
			Expect(name).To(HaveSuffix(fmt.Sprintf("_%d.pb_length_delimited", s.GetTraceId())))
		}
		// Matched at the request headers: every part streams, each request
		// body chunk cut at max_buffered_rx_bytes.
		Expect(segs[0].GetRequestHeaders().GetHeaders()).To(ContainElement(HaveField("Key", "x-file")))
		Expect(segs[1].GetRequestBodyChunk().GetAsBytes()).To(HaveLen(3))
		Expect(segs[1].GetRequestBodyChunk().GetTruncated()).To(BeTrue())
		var sawResponse bool
		for _, s := range segs[2:] {
			sawResponse = sawResponse || s.GetResponseHeaders() != nil
		}
		Expect(sawResponse).To(BeTrue())
	})

	It("is refused by path where a field is not implemented", func() {
		res, _ := validate("tap.yaml", tapBootstrap(freePort(), "127.0.0.1:1", "/tmp/x", "PROTO_TEXT", ", min_streamed_sent_bytes: 1"))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("output_config.min_streamed_sent_bytes"))
	})
})

var _ = Describe("The /tap endpoint", func() {
	It("comes with a tap filter delivered by LDS and goes with it", func() {
		dir := ldsSetup(ldsResponse("v1"))
		sc := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "0")
		Expect(sc.Get("/help").Body).NotTo(ContainSubstring("/tap"))
		Expect(sc.Do(http.MethodPost, "/tap", strings.NewReader(tapRequest), nil).Status).To(Equal(404))

		port := freePort()
		chain := strings.Replace(directChain("tapped", ""), "http_filters: [", `http_filters: [{name: envoy.filters.http.tap, typed_config: {`+
			`"@type": type.googleapis.com/envoy.extensions.filters.http.tap.v3.Tap, common_config: {admin_config: {config_id: lds}}}}, `, 1)
		replaceLDS(dir, ldsResponse("v2", listenerDef{Name: "tapped", Port: port, Chains: []string{chain}}))
		Eventually(func() string { return sc.Get("/help").Body }, 10*time.Second).Should(ContainSubstring("/tap"))

		ts, code, msg := attachTap(sc, `{config_id: lds, tap_config: {match: {any_match: true},
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}], streaming: true}}}`)
		Expect(code).To(Equal(200), msg)
		Expect(getBody(fmt.Sprintf("127.0.0.1:%d", port))).To(Equal("tapped"))
		Expect(ts.next().Segment.part()).To(Equal("request_headers"))
		Expect(ts.next().Segment.part()).To(Equal("response_headers"))
		s := ts.next().Segment
		Expect(s.part()).To(Equal("response_body_chunk"))
		Expect(s.ResponseBodyChunk.AsString).To(Equal("tapped"))
		ts.cancel()

		replaceLDS(dir, ldsResponse("v3"))
		Eventually(func() int {
			return sc.Do(http.MethodPost, "/tap", strings.NewReader(tapRequest), nil).Status
		}, 10*time.Second, 100*time.Millisecond).Should(Equal(404))
		Expect(sc.Get("/help").Body).NotTo(ContainSubstring("/tap"))
	})
})
