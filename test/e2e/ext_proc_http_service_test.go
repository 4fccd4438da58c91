package e2e

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// httpProcessor is an external processor over HTTP (ext_proc's
// http_service): each POST's body is a ProcessingRequest in JSON, answered
// with a ProcessingResponse in JSON. Request headers of a path with /fail
// are answered 503; otherwise it adds x-proc-req to the request headers
// and x-proc-resp to the response headers. It records each POST's method,
// path and message kind.
type httpProcessor struct {
	mu   sync.Mutex
	seen []string
}

func (p *httpProcessor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	req := &extprocsvc.ProcessingRequest{}
	if err := protojson.Unmarshal(b, req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	resp := &extprocsvc.ProcessingResponse{}
	kind := "other"
	switch v := req.GetRequest().(type) {
	case *extprocsvc.ProcessingRequest_RequestHeaders:
		path := headerOf(v.RequestHeaders.GetHeaders(), ":path")
		kind = "request_headers(" + path + ")"
		if strings.Contains(path, "/fail") {
			w.WriteHeader(503)
			p.record(r.Method + " " + r.URL.Path + " " + kind)
			return
		}
		resp.Response = &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{Response: &extprocsvc.CommonResponse{
			HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-proc-req", "over-http")}},
		}}}
	case *extprocsvc.ProcessingRequest_ResponseHeaders:
		kind = "response_headers(" + headerOf(v.ResponseHeaders.GetHeaders(), ":status") + ")"
		resp.Response = &extprocsvc.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvc.HeadersResponse{Response: &extprocsvc.CommonResponse{
			HeaderMutation: &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("x-proc-resp", "over-http")}},
		}}}
	}
	p.record(r.Method + " " + r.URL.Path + " " + kind)
	out, _ := protojson.Marshal(resp)
	w.Header().Set("content-type", "application/json")
	_, _ = w.Write(out)
}

func (p *httpProcessor) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, s)
}

func (p *httpProcessor) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

var _ = Describe("The external processing filter over HTTP (http_service)", func() {
	client := &http.Client{Timeout: 10 * time.Second}
	const service = `http_service: {http_service: {http_uri: {uri: "http://processor/ext/proc", cluster: proc, timeout: 2s}}}`

	It("posts each head as JSON to the HTTP processor and applies its answers; a failed exchange answers 500, or lets the request go with failure_mode_allow", func() {
		proc := &httpProcessor{}
		procPort := portNum(httpTestUpstream(proc, false))
		port, fmaPort := freePort(), freePort()
		spec := extProcListener("hs", port, service+", stat_prefix: web", "", procPort)
		clusters := []proxyCluster{{Name: "up", Port: portNum(extProcUpstream())}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort}}
		spec.Clusters = clusters
		spec.More = []proxySpec{extProcListener("hsfma", fmaPort, service+", failure_mode_allow: true", "", procPort)}
		sc := Start(newDir(), spec.YAML())

		r := httpDo(client, "GET", listenerURL(port, "/ok"), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(ContainSubstring("x-proc-req=over-http\n"), "the request head was mutated")
		Expect(r.Header.Get("x-proc-resp")).To(Equal("over-http"), "the response head was mutated")
		Expect(proc.got()).To(Equal([]string{"POST /ext/proc request_headers(/ok)", "POST /ext/proc response_headers(200)"}))
		Expect(statValue(sc, "http.hs.ext_proc.web.stream_msgs_sent")).To(Equal("2"))
		Expect(statValue(sc, "http.hs.ext_proc.web.stream_msgs_received")).To(Equal("2"))
		Expect(statValue(sc, "http.hs.ext_proc.web.streams_started")).To(Equal("0"), "there is no stream")

		r = httpDo(client, "GET", listenerURL(port, "/fail/1"), nil, nil)
		Expect(r.Status).To(Equal(500))
		Expect(statValue(sc, "http.hs.ext_proc.web.http_not_ok_resp_received")).To(Equal("1"))

		r = httpDo(client, "GET", listenerURL(fmaPort, "/fail/2"), nil, nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(ContainSubstring("x-proc-req=\n"), "the request went on unprocessed")
		Expect(statValue(sc, "http.hsfma.ext_proc.failure_mode_allowed")).To(Equal("1"))
	})

	It("refuses a processing mode that sends a body or trailers, as Envoy does", func() {
		spec := extProcListener("hsbad", freePort(), service+", processing_mode: {request_body_mode: BUFFERED}", "", 1)
		spec.Clusters = []proxyCluster{{Name: "up", Port: 1}, {Name: "uph2", Port: 1}, {Name: "proc", Port: 1}}
		res, _ := validate("bad.yaml", spec.YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("processing_mode: If http_service is configured, processing modes can not send any body or trailer."))
	})
})
