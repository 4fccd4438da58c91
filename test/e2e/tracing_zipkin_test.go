package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// zipkinSpan is a span of Zipkin's JSON v2 format, as a collector reads it.
type zipkinSpan struct {
	TraceID       string            `json:"traceId"`
	ParentID      string            `json:"parentId"`
	ID            string            `json:"id"`
	Kind          string            `json:"kind"`
	Name          string            `json:"name"`
	Timestamp     int64             `json:"timestamp"`
	Duration      int64             `json:"duration"`
	LocalEndpoint map[string]string `json:"localEndpoint"`
	Tags          map[string]string `json:"tags"`
	Shared        bool              `json:"shared"`
	Annotations   []struct {
		Timestamp int64  `json:"timestamp"`
		Value     string `json:"value"`
	} `json:"annotations"`
}

// zipkinCollector is a Zipkin HTTP endpoint keeping the spans posted to
// /api/v2/spans, or refusing them with 500.
type zipkinCollector struct {
	refuse  atomic.Bool
	refused atomic.Int64
	mu      sync.Mutex
	spans   []zipkinSpan
	hosts   []string
	// tokens are the X-Custom-Token headers of the reports.
	tokens []string
	port   int
}

func (c *zipkinCollector) tokenHeaders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...)
}

func (c *zipkinCollector) received() []zipkinSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]zipkinSpan(nil), c.spans...)
}

func (c *zipkinCollector) hostHeaders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.hosts...)
}

func startZipkinCollector() *zipkinCollector {
	GinkgoHelper()
	c := &zipkinCollector{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v2/spans", func(w http.ResponseWriter, r *http.Request) {
		if c.refuse.Load() {
			c.refused.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var spans []zipkinSpan
		if err != nil || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &spans) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.spans = append(c.spans, spans...)
		c.hosts = append(c.hosts, r.Host)
		c.tokens = append(c.tokens, r.Header.Get("X-Custom-Token"))
		c.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	})
	addr := httpTestUpstream(mux, false)
	_, port, _ := net.SplitHostPort(addr)
	_, _ = fmt.Sscan(port, &c.port)
	return c
}

// zipkinTracing is a tracing block with the Zipkin provider; extra lines
// go into its typed_config.
func zipkinTracing(extra string) string {
	return `            random_sampling: {value: 100}
            provider:
              name: envoy.tracers.zipkin
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.ZipkinConfig
                collector_cluster: zipkin
                collector_endpoint: /api/v2/spans
                collector_endpoint_version: HTTP_JSON
` + extra
}

// zipkinByName finds a received span.
func zipkinByName(spans []zipkinSpan, name string) *zipkinSpan {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

var _ = Describe("Tracing with Zipkin", func() {
	It("posts JSON v2 spans to the collector cluster, sharing the client's span, and propagates B3", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			zipkinTracing("                collector_hostname: zipkin.example\n"), httpCollectorCluster("zipkin", collector.port), ""))

		code, _ := tracedGet(port, "/checkout", http.Header{
			"X-B3-Traceid":      {"463ac35c9f6413ad48485a3953bb6124"},
			"X-B3-Spanid":       {"a2fb4a1d1a96d312"},
			"X-B3-Parentspanid": {"0020000000000001"},
			"X-B3-Sampled":      {"1"},
		})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		sp := collector.received()[0]
		Expect(sp.Name).To(Equal("checkout"))
		Expect(sp.Kind).To(Equal("SERVER"))
		Expect(sp.TraceID).To(Equal("463ac35c9f6413ad48485a3953bb6124"))
		Expect(sp.ID).To(Equal("a2fb4a1d1a96d312"), "an ingress span shares the client's span")
		Expect(sp.ParentID).To(Equal("0020000000000001"))
		Expect(sp.Shared).To(BeTrue())
		Expect(sp.Duration).To(BeNumerically(">=", 0))
		Expect(sp.Timestamp).To(BeNumerically(">", 0))
		Expect(sp.LocalEndpoint).To(HaveKeyWithValue("serviceName", "tracing-cluster"))
		Expect(sp.Tags).To(HaveKeyWithValue("http.status_code", "200"))
		Expect(sp.Tags).To(HaveKeyWithValue("upstream_cluster", "up"))
		Expect(sp.Tags).To(HaveKeyWithValue("node_id", "tracing-node"))
		Expect(collector.hostHeaders()).To(ContainElement("zipkin.example"))

		h := up.headers("/checkout")
		Expect(h.Get("X-B3-Traceid")).To(Equal("463ac35c9f6413ad48485a3953bb6124"))
		Expect(h.Get("X-B3-Spanid")).To(Equal("a2fb4a1d1a96d312"))
		Expect(h.Get("X-B3-Parentspanid")).To(Equal("0020000000000001"))
		Expect(h.Get("X-B3-Sampled")).To(Equal("1"))

		// No context: a new trace rooted at the proxy, named after the
		// host, 64-bit by default.
		code, _ = tracedGet(port, "/root", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(2))
		root := zipkinByName(collector.received(), fmt.Sprintf("127.0.0.1:%d", port))
		Expect(root).NotTo(BeNil())
		Expect(root.ParentID).To(BeEmpty())
		Expect(root.TraceID).To(HaveLen(16))
		Expect(up.headers("/root").Get("X-B3-Traceid")).To(Equal(root.TraceID))
		Expect(up.headers("/root").Get("X-B3-Spanid")).To(Equal(root.ID))

		// A client that says not sampled is not traced, and the upstream
		// is told so.
		code, _ = tracedGet(port, "/not-sampled", http.Header{"B3": {"80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0"}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/not-sampled").Get("X-B3-Sampled")).To(Equal("0"))
		Expect(up.headers("/not-sampled").Get("X-B3-Traceid")).To(Equal("80f198ee56343ba864fe8b2a57d3eff7"))
		Expect(up.headers("/not-sampled").Get("B3")).To(BeEmpty())

		Expect(statValue(s, "tracing.zipkin.spans_sent")).To(Equal("2"))
		Expect(statValue(s, "tracing.zipkin.reports_dropped")).To(Equal("0"))
		Consistently(collector.received, "300ms").Should(HaveLen(2))
	})

	It("makes the ingress span a child without shared_span_context, with 128-bit trace ids for new traces", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			zipkinTracing("                shared_span_context: false\n                trace_id_128bit: true\n"),
			httpCollectorCluster("zipkin", collector.port), ""))
		code, _ := tracedGet(port, "/child", http.Header{"B3": {"463ac35c9f6413ad-a2fb4a1d1a96d312-1"}})
		Expect(code).To(Equal(200))
		code, _ = tracedGet(port, "/new", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(2))
		var child, fresh *zipkinSpan
		for _, sp := range collector.received() {
			if sp.TraceID == "463ac35c9f6413ad" {
				child = &sp
			} else {
				fresh = &sp
			}
		}
		Expect(child).NotTo(BeNil())
		Expect(child.ParentID).To(Equal("a2fb4a1d1a96d312"))
		Expect(child.ID).NotTo(Equal("a2fb4a1d1a96d312"))
		Expect(child.Shared).To(BeFalse())
		Expect(up.headers("/child").Get("X-B3-Spanid")).To(Equal(child.ID))
		Expect(up.headers("/child").Get("X-B3-Parentspanid")).To(Equal("a2fb4a1d1a96d312"))
		Expect(fresh).NotTo(BeNil())
		Expect(fresh.TraceID).To(HaveLen(32))
	})

	It("reads a traceparent when B3 is absent and writes both with trace_context_option USE_B3_WITH_W3C_PROPAGATION", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			zipkinTracing("                trace_context_option: USE_B3_WITH_W3C_PROPAGATION\n"),
			httpCollectorCluster("zipkin", collector.port), ""))

		// Only W3C: the trace and the shared span are the traceparent's.
		code, _ := tracedGet(port, "/w3c", http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		sp := collector.received()[0]
		Expect(sp.TraceID).To(Equal("4bf92f3577b34da6a3ce929d0e0e4736"))
		Expect(sp.ID).To(Equal("00f067aa0ba902b7"))
		Expect(sp.Shared).To(BeTrue())
		h := up.headers("/w3c")
		Expect(h.Get("X-B3-Traceid")).To(Equal("4bf92f3577b34da6a3ce929d0e0e4736"))
		Expect(h.Get("X-B3-Spanid")).To(Equal("00f067aa0ba902b7"))
		Expect(h.Get("X-B3-Sampled")).To(Equal("1"))
		Expect(h.Get("Traceparent")).To(Equal("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))

		// B3 wins over a traceparent, and both go upstream: a 64-bit B3
		// trace id padded to the traceparent's 32 digits.
		code, _ = tracedGet(port, "/both", http.Header{
			"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Sampled": {"0"},
			"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		})
		Expect(code).To(Equal(200))
		h = up.headers("/both")
		Expect(h.Get("X-B3-Traceid")).To(Equal("463ac35c9f6413ad"))
		Expect(h.Get("X-B3-Sampled")).To(Equal("0"))
		Expect(h.Get("Traceparent")).To(Equal("00-0000000000000000463ac35c9f6413ad-a2fb4a1d1a96d312-00"))
		Consistently(collector.received, "300ms").Should(HaveLen(1), "B3 said not sampled")

		// Neither: a new trace, written in both forms.
		code, _ = tracedGet(port, "/none", nil)
		Expect(code).To(Equal(200))
		h = up.headers("/none")
		Expect(h.Get("Traceparent")).To(Equal("00-0000000000000000" + h.Get("X-B3-Traceid") + "-" + h.Get("X-B3-Spanid") + "-01"))
	})

	It("makes an egress span the server's with split_spans_for_request, and the upstream span the client's", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "OUTBOUND",
			zipkinTracing("                split_spans_for_request: true\n"),
			httpCollectorCluster("zipkin", collector.port), "              start_child_span: true"))
		code, _ := tracedGet(port, "/split", http.Header{"B3": {"463ac35c9f6413ad-a2fb4a1d1a96d312-1"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(2))
		var server, client *zipkinSpan
		for i, sp := range collector.received() {
			switch sp.Kind {
			case "SERVER":
				server = &collector.received()[i]
			case "CLIENT":
				client = &collector.received()[i]
			}
		}
		Expect(server).NotTo(BeNil(), "%+v", collector.received())
		Expect(server.ID).To(Equal("a2fb4a1d1a96d312"), "a server span shares the client's span")
		Expect(client).NotTo(BeNil(), "%+v", collector.received())
		Expect(client.ParentID).To(Equal(server.ID))
		Expect(up.headers("/split").Get("X-B3-Spanid")).To(Equal(client.ID))
	})

	It("posts to collector_service: its cluster, the host and path of its uri, and its headers; formats value custom tags", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		service := `            random_sampling: {value: 100}
            custom_tags:
            - {tag: proto, value: "%PROTOCOL%"}
            - {tag: tenant, value: "tenant %REQ(x-tenant)%"}
            - {tag: absent, value: "%REQ(x-absent)%"}
            provider:
              name: envoy.tracers.zipkin
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.ZipkinConfig
                collector_endpoint_version: HTTP_JSON
                collector_service:
                  http_uri: {uri: "https://zipkin-collector.example.com/api/v2/spans", cluster: zipkin, timeout: 5s}
                  request_headers_to_add:
                  - header: {key: X-Custom-Token, value: secret-token}
`
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", service, httpCollectorCluster("zipkin", collector.port), ""))
		code, _ := tracedGet(port, "/svc", http.Header{"X-Tenant": {"t1"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		tags := collector.received()[0].Tags
		Expect(tags).To(HaveKeyWithValue("proto", "HTTP/1.1"))
		Expect(tags).To(HaveKeyWithValue("tenant", "tenant t1"))
		Expect(tags).NotTo(HaveKey("absent"), "a tag whose value formats to nothing is not set")
		Expect(collector.hostHeaders()).To(Equal([]string{"zipkin-collector.example.com"}))
		Expect(collector.tokenHeaders()).To(Equal([]string{"secret-token"}))
	})

	It("takes a path-only collector_service uri with the cluster's name as the host", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		service := `            random_sampling: {value: 100}
            provider:
              name: envoy.tracers.zipkin
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.ZipkinConfig
                collector_service:
                  http_uri: {uri: /api/v2/spans, cluster: zipkin, timeout: 1s}
`
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", service, httpCollectorCluster("zipkin", collector.port), ""))
		code, _ := tracedGet(port, "/path-only", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		Expect(collector.hostHeaders()).To(Equal([]string{"zipkin"}))
		Expect(collector.tokenHeaders()).To(Equal([]string{""}))
	})

	It("starts new trace ids with the epoch seconds with timestamp_trace_ids", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			zipkinTracing("                timestamp_trace_ids: true\n"),
			httpCollectorCluster("zipkin", collector.port), ""))
		before := time.Now().Unix()
		code, _ := tracedGet(port, "/new", nil)
		after := time.Now().Unix()
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		id := collector.received()[0].TraceID
		Expect(id).To(HaveLen(16))
		stamp, err := strconv.ParseInt(id[:8], 16, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(stamp).To(BeNumerically(">=", before), "the trace id %s starts with the request's epoch seconds", id)
		Expect(stamp).To(BeNumerically("<=", after), "the trace id %s starts with the request's epoch seconds", id)
	})

	It("keeps serving when the collector refuses spans, and counts the dropped reports", func() {
		collector := startZipkinCollector()
		collector.refuse.Store(true)
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			zipkinTracing(""), httpCollectorCluster("zipkin", collector.port), ""))
		for i := range 5 {
			code, _ := tracedGet(port, fmt.Sprintf("/refused/%d", i), nil)
			Expect(code).To(Equal(200))
		}
		Eventually(collector.refused.Load).Should(BeNumerically(">=", 1))
		Eventually(func() string { return statValue(s, "tracing.zipkin.reports_dropped") }).ShouldNot(Equal("0"))
	})

	It("takes the bootstrap's tracing.http when the connection manager names no provider", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		cfg := tracingBootstrap(port, up.port, "INBOUND", "            random_sampling: {value: 100}\n",
			httpCollectorCluster("zipkin", collector.port), "")
		cfg += `
tracing:
  http:
    name: envoy.tracers.zipkin
    typed_config:
      "@type": type.googleapis.com/envoy.config.trace.v3.ZipkinConfig
      collector_cluster: zipkin
      collector_endpoint: /api/v2/spans
`
		Start(newDir(), cfg)
		code, _ := tracedGet(port, "/from-bootstrap", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
	})
})
