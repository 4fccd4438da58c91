package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// otlpCollector is an OpenTelemetry collector's trace service: it keeps the
// spans it receives, or refuses them all.
type otlpCollector struct {
	collectorpb.UnimplementedTraceServiceServer
	refuse  atomic.Bool
	refused atomic.Int64
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	// resources are the string attributes of every resource received.
	resources []map[string]string
	// scopes are the instrumentation scopes of every ScopeSpans received,
	// as "name version" ("" for none).
	scopes []string
}

func (c *otlpCollector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	if c.refuse.Load() {
		c.refused.Add(1)
		return nil, status.Error(codes.Unavailable, "collector refuses spans")
	}
	c.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// add keeps the spans of an export request.
func (c *otlpCollector) add(req *collectorpb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		attrs := map[string]string{}
		for _, a := range rs.GetResource().GetAttributes() {
			attrs[a.GetKey()] = a.GetValue().GetStringValue()
			if a.GetKey() == "service.name" {
				c.service = append(c.service, a.GetValue().GetStringValue())
			}
		}
		c.resources = append(c.resources, attrs)
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
			scope := ""
			if sc := ss.GetScope(); sc != nil {
				scope = sc.GetName() + " " + sc.GetVersion()
			}
			c.scopes = append(c.scopes, scope)
		}
	}
}

// received returns the spans received so far.
func (c *otlpCollector) received() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

// serviceNames returns the service.name of every resource received.
func (c *otlpCollector) serviceNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.service...)
}

// scopeNames returns the instrumentation scope of every ScopeSpans
// received, as "name version" ("" for none).
func (c *otlpCollector) scopeNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.scopes...)
}

// resourceAttributes returns the attributes of every resource received.
func (c *otlpCollector) resourceAttributes() []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]string(nil), c.resources...)
}

// startOTLPCollector serves the trace service on a loopback port until the
// spec ends.
func startOTLPCollector() (*otlpCollector, int) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	c := &otlpCollector{}
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return c, ln.Addr().(*net.TCPAddr).Port
}

// startOTLPHTTPReceiver serves OTLP/HTTP (protobuf) on /v1/traces, into c;
// while c refuses, it answers 503.
func startOTLPHTTPReceiver(c *otlpCollector) (int, *atomic.Value) {
	GinkgoHelper()
	contentType := &atomic.Value{}
	contentType.Store("")
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		contentType.Store(r.Header.Get("Content-Type") + " " + r.Header.Get("X-Tenant") + " " + r.Host)
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if c.refuse.Load() {
			c.refused.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.add(&req)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	addr := httpTestUpstream(mux, false)
	_, port, _ := net.SplitHostPort(addr)
	var p int
	_, _ = fmt.Sscan(port, &p)
	return p, contentType
}

// tracedUpstream records the headers of the requests it receives, by path;
// /fail answers 503, and the answer to /named names the upstream's own
// operation.
type tracedUpstream struct {
	mu   sync.Mutex
	seen map[string]http.Header
	port int
}

// headers returns the headers the upstream received with a path.
func (u *tracedUpstream) headers(path string) http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[path]
}

func startTracedUpstream() *tracedUpstream {
	GinkgoHelper()
	u := &tracedUpstream{seen: map[string]http.Header{}}
	addr := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen[r.URL.Path] = r.Header.Clone()
		u.mu.Unlock()
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/named":
			w.Header().Set("X-Envoy-Decorator-Operation", "upstream-op")
		}
		_, _ = io.WriteString(w, "ok")
	}), false)
	_, port, _ := net.SplitHostPort(addr)
	_, _ = fmt.Sscan(port, &u.port)
	return u
}

// tracingBootstrap is a listener on port routing to the upstream on
// upPort (cluster "up"), with the connection manager's tracing given, the
// collector clusters given, and a runtime that exports every span at once.
// direction is the listener's traffic_direction. Loopback clients are
// internal (internal_address_config), so that x-envoy-force-trace and the
// clients' x-request-id are kept.
func tracingBootstrap(port, upPort int, direction, tracingCfg, clusters, router string) string {
	return fmt.Sprintf(`
node: {id: tracing-node, cluster: tracing-cluster, locality: {zone: zone-a}}
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
layered_runtime:
  layers:
  - name: static
    static_layer:
      tracing.opentelemetry.min_flush_spans: 1
      tracing.opentelemetry.flush_interval_ms: 100
      tracing.zipkin.min_flush_spans: 1
      tracing.zipkin.flush_interval_ms: 100
static_resources:
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: up
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
%s
  listeners:
  - name: l
    traffic_direction: %s
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: traced
          # Loopback clients are internal: they may force traces.
          use_remote_address: true
          internal_address_config: {cidr_ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}]}
          tracing:
%s
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {path: /checkout}
                decorator: {operation: checkout}
                route: {cluster: up}
              - match: {path: /quiet}
                decorator: {operation: quiet, propagate: false}
                route: {cluster: up}
              - match: {prefix: /route-sampled}
                tracing:
                  random_sampling: {numerator: 100}
                  custom_tags: [{tag: team, literal: {value: routing}}, {tag: route, literal: {value: own}}]
                route: {cluster: up}
              - match: {prefix: /}
                route: {cluster: up}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
%s
`, upPort, clusters, direction, port, tracingCfg, router)
}

// grpcCollectorCluster is the cluster "otlp" of an OTLP gRPC collector.
func grpcCollectorCluster(port int) string {
	return fmt.Sprintf(`
  - name: otlp
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: otlp
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]`, port)
}

// httpCollectorCluster is a plain HTTP cluster of a collector.
func httpCollectorCluster(name string, port int) string {
	return fmt.Sprintf(`
  - name: %s
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: %s
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]`, name, name, port)
}

// otelTracing is a tracing block with the OpenTelemetry provider over gRPC
// and the given sampling lines.
func otelTracing(sampling string) string {
	return `            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                service_name: edge-proxy
                grpc_service: {envoy_grpc: {cluster_name: otlp}, timeout: 1s}
            custom_tags:
            - {tag: team, literal: {value: payments}}
            - {tag: tenant, request_header: {name: x-tenant, default_value: none}}
` + sampling
}

// tracedGet sends a GET with headers and returns the status and the
// response headers.
func tracedGet(port int, path string, header http.Header) (int, http.Header) {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, listenerURL(port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// spanAttr is a span's string attribute.
func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// spanNamed finds the received span of a name.
func spanNamed(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

// traceparentOf splits a traceparent: trace id, parent id, flags.
func traceparentOf(v string) (string, string, string) {
	parts := strings.Split(v, "-")
	Expect(parts).To(HaveLen(4), "traceparent %q", v)
	return parts[1], parts[2], parts[3]
}

const (
	incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan  = "00f067aa0ba902b7"
)

var _ = Describe("Tracing with OpenTelemetry", func() {
	It("exports the spans of sampled requests over gRPC, children of the incoming context, and propagates the proxy's span", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			otelTracing("            random_sampling: {value: 100}\n"), grpcCollectorCluster(cport), ""))

		code, resp := tracedGet(port, "/checkout?item=1", http.Header{
			"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-01"},
			"Tracestate":  {"vendor=opaque"},
			"X-Tenant":    {"acme"},
			"User-Agent":  {"e2e-agent"},
		})
		Expect(code).To(Equal(200))
		// The ingress span's decorated name goes back to the client.
		Expect(resp.Get("X-Envoy-Decorator-Operation")).To(Equal("checkout"))

		Eventually(collector.received).Should(HaveLen(1))
		sp := collector.received()[0]
		Expect(sp.GetName()).To(Equal("checkout"))
		Expect(sp.GetKind()).To(Equal(tracepb.Span_SPAN_KIND_SERVER))
		Expect(hex.EncodeToString(sp.GetTraceId())).To(Equal(incomingTrace))
		Expect(hex.EncodeToString(sp.GetParentSpanId())).To(Equal(incomingSpan))
		Expect(sp.GetTraceState()).To(Equal("vendor=opaque"))
		Expect(sp.GetEndTimeUnixNano()).To(BeNumerically(">=", sp.GetStartTimeUnixNano()))
		Expect(collector.serviceNames()).To(ConsistOf("edge-proxy"))

		// The upstream's parent is the proxy's span.
		h := up.headers("/checkout")
		trace, parent, flags := traceparentOf(h.Get("Traceparent"))
		Expect(trace).To(Equal(incomingTrace))
		Expect(parent).To(Equal(hex.EncodeToString(sp.GetSpanId())))
		Expect(flags).To(Equal("01"))
		Expect(h.Get("Tracestate")).To(Equal("vendor=opaque"))
		// A sampled request's id says so (the UUID's version digit).
		Expect(h.Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-b[0-9a-f]{3}-`))

		for k, v := range map[string]string{
			"component":             "proxy",
			"node_id":               "tracing-node",
			"zone":                  "zone-a",
			"http.method":           "GET",
			"http.protocol":         "HTTP/1.1",
			"http.status_code":      "200",
			"http.url":              fmt.Sprintf("http://127.0.0.1:%d/checkout?item=1", port),
			"upstream_cluster":      "up",
			"upstream_cluster.name": "up",
			"user_agent":            "e2e-agent",
			"downstream_cluster":    "-",
			"peer.address":          "127.0.0.1",
			"response_flags":        "-",
			"response_size":         "2",
			"request_size":          "0",
			"guid:x-request-id":     h.Get("X-Request-Id"),
			"team":                  "payments",
			"tenant":                "acme",
		} {
			Expect(spanAttr(sp, k)).To(Equal(v), "tag %s", k)
		}
		Expect(spanAttr(sp, "error")).To(BeEmpty())

		// Without a context, the span is a root of a new trace; a 5xx is
		// an error; a route whose decorator does not propagate keeps its
		// name to itself.
		code, _ = tracedGet(port, "/fail", nil)
		Expect(code).To(Equal(503))
		code, resp = tracedGet(port, "/quiet", nil)
		Expect(code).To(Equal(200))
		Expect(resp.Get("X-Envoy-Decorator-Operation")).To(BeEmpty())
		Eventually(collector.received).Should(HaveLen(3))
		fail := spanNamed(collector.received(), "ingress")
		Expect(fail).NotTo(BeNil())
		Expect(fail.GetParentSpanId()).To(BeEmpty())
		Expect(spanAttr(fail, "error")).To(Equal("true"))
		Expect(spanAttr(fail, "http.status_code")).To(Equal("503"))
		Expect(spanAttr(fail, "tenant")).To(Equal("none"))
		trace, parent, _ = traceparentOf(up.headers("/fail").Get("Traceparent"))
		Expect(trace).To(Equal(hex.EncodeToString(fail.GetTraceId())))
		Expect(parent).To(Equal(hex.EncodeToString(fail.GetSpanId())))
		Expect(spanNamed(collector.received(), "quiet")).NotTo(BeNil())

		Expect(statValue(s, "http.traced.tracing.random_sampling")).To(Equal("3"))
		Expect(statValue(s, "http.traced.tracing.not_traceable")).To(Equal("0"))
		Expect(statValue(s, "tracing.opentelemetry.spans_sent")).To(Equal("3"))
		Expect(statValue(s, "cluster.otlp.upstream_cx_total")).To(Equal("1"))

		// Spans buffered at shutdown are exported before the process
		// exits.
		code, _ = tracedGet(port, "/at-exit", nil)
		Expect(code).To(Equal(200))
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Eventually(collector.received).Should(HaveLen(4))
	})

	It("samples by x-request-id: none at 0%, and x-envoy-force-trace and x-client-trace-id still traced", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			otelTracing("            random_sampling: {value: 0}\n"), grpcCollectorCluster(cport), ""))

		for i := range 5 {
			code, _ := tracedGet(port, fmt.Sprintf("/unsampled/%d", i), nil)
			Expect(code).To(Equal(200))
		}
		// Unsampled requests still carry the proxy's context, marked not
		// sampled.
		_, _, flags := traceparentOf(up.headers("/unsampled/0").Get("Traceparent"))
		Expect(flags).To(Equal("00"))
		Expect(up.headers("/unsampled/0").Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-4`))

		code, _ := tracedGet(port, "/forced", http.Header{"X-Envoy-Force-Trace": {"true"}})
		Expect(code).To(Equal(200))
		code, _ = tracedGet(port, "/client", http.Header{"X-Client-Trace-Id": {"client-42"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(2))
		Expect(up.headers("/forced").Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-a`))
		Expect(up.headers("/client").Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-c`))
		var client *tracepb.Span
		for _, sp := range collector.received() {
			if strings.HasSuffix(spanAttr(sp, "http.url"), "/client") {
				client = sp
			}
		}
		Expect(client).NotTo(BeNil())
		Expect(spanAttr(client, "guid:x-client-trace-id")).To(Equal("client-42"))

		// A route's own tracing replaces the manager's sampling (100%
		// there, 0% here) and adds its tags, over the manager's of the
		// same name.
		code, _ = tracedGet(port, "/route-sampled/x", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(3))
		var routed *tracepb.Span
		for _, sp := range collector.received() {
			if strings.HasSuffix(spanAttr(sp, "http.url"), "/route-sampled/x") {
				routed = sp
			}
		}
		Expect(routed).NotTo(BeNil())
		Expect(spanAttr(routed, "team")).To(Equal("routing"))
		Expect(spanAttr(routed, "route")).To(Equal("own"))

		// A request id that already records a decision keeps it.
		code, _ = tracedGet(port, "/kept", http.Header{"X-Request-Id": {"0123abcd-0000-b000-8000-000000000000"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(4))

		Expect(statValue(s, "http.traced.tracing.not_traceable")).To(Equal("5"))
		Expect(statValue(s, "http.traced.tracing.service_forced")).To(Equal("1"))
		Expect(statValue(s, "http.traced.tracing.client_enabled")).To(Equal("1"))
		Expect(statValue(s, "http.traced.tracing.random_sampling")).To(Equal("2"))
		Expect(statValue(s, "http.traced.tracing.health_check")).To(Equal("0"))
	})

	It("gives each upstream request a child span with start_child_span, whose context the upstream receives", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			otelTracing(""), grpcCollectorCluster(cport), "              start_child_span: true"))
		code, _ := tracedGet(port, "/child", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(2))
		server := spanNamed(collector.received(), "ingress")
		child := spanNamed(collector.received(), "router up egress")
		Expect(server).NotTo(BeNil())
		Expect(child).NotTo(BeNil())
		Expect(child.GetKind()).To(Equal(tracepb.Span_SPAN_KIND_CLIENT))
		Expect(child.GetTraceId()).To(Equal(server.GetTraceId()))
		Expect(child.GetParentSpanId()).To(Equal(server.GetSpanId()))
		Expect(spanAttr(child, "upstream_address")).To(Equal(fmt.Sprintf("127.0.0.1:%d", up.port)))
		Expect(spanAttr(child, "http.status_code")).To(Equal("200"))
		_, parent, _ := traceparentOf(up.headers("/child").Get("Traceparent"))
		Expect(parent).To(Equal(hex.EncodeToString(child.GetSpanId())))
	})

	It("names egress spans after the host, passes the decorator on to the upstream and takes the upstream's name back", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "OUTBOUND",
			otelTracing(""), grpcCollectorCluster(cport), ""))
		code, resp := tracedGet(port, "/checkout", nil)
		Expect(code).To(Equal(200))
		Expect(resp.Get("X-Envoy-Decorator-Operation")).To(BeEmpty())
		Expect(up.headers("/checkout").Get("X-Envoy-Decorator-Operation")).To(Equal("checkout"))
		code, resp = tracedGet(port, "/named", nil)
		Expect(code).To(Equal(200))
		Expect(resp.Get("X-Envoy-Decorator-Operation")).To(BeEmpty(), "the upstream's name stops at the proxy")
		code, _ = tracedGet(port, "/plain", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(3))
		Expect(spanNamed(collector.received(), "checkout").GetKind()).To(Equal(tracepb.Span_SPAN_KIND_CLIENT))
		Expect(spanNamed(collector.received(), "upstream-op")).NotTo(BeNil())
		Expect(spanNamed(collector.received(), fmt.Sprintf("egress 127.0.0.1:%d", port))).NotTo(BeNil())
	})

	It("lets an ingress request name its own span with x-envoy-decorator-operation, which goes no further", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", otelTracing(""), grpcCollectorCluster(cport), ""))
		code, resp := tracedGet(port, "/checkout", http.Header{"X-Envoy-Decorator-Operation": {"client-op"}})
		Expect(code).To(Equal(200))
		Expect(resp.Get("X-Envoy-Decorator-Operation")).To(BeEmpty(), "the route's name is not echoed once the request named the span")
		Expect(up.headers("/checkout").Get("X-Envoy-Decorator-Operation")).To(BeEmpty())
		Eventually(collector.received).Should(HaveLen(1))
		Expect(collector.received()[0].GetName()).To(Equal("client-op"))
	})

	It("exports over OTLP/HTTP to a cluster, with the configured headers", func() {
		collector := &otlpCollector{}
		rport, seen := startOTLPHTTPReceiver(collector)
		up := startTracedUpstream()
		port := freePort()
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", `            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                http_service:
                  http_uri: {uri: "http://otel-collector:4318/v1/traces", cluster: otlp-http, timeout: 1s}
                  request_headers_to_add: [{header: {key: x-tenant, value: acme}}]
`, httpCollectorCluster("otlp-http", rport), ""))
		code, _ := tracedGet(port, "/over-http", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		Expect(seen.Load()).To(Equal("application/x-protobuf acme otel-collector:4318"))
		Expect(collector.serviceNames()).To(ConsistOf("unknown_service:envoy"))
		Expect(spanAttr(collector.received()[0], "http.url")).To(HaveSuffix("/over-http"))
	})

	It("keeps serving when the collector refuses spans or is down, and counts the failed reports", func() {
		collector, cport := startOTLPCollector()
		collector.refuse.Store(true)
		up := startTracedUpstream()
		port := freePort()
		s := Start(newDir(), tracingBootstrap(port, up.port, "INBOUND",
			otelTracing(""), grpcCollectorCluster(cport), ""))
		for i := range 5 {
			code, _ := tracedGet(port, fmt.Sprintf("/refused/%d", i), nil)
			Expect(code).To(Equal(200))
		}
		Eventually(collector.refused.Load).Should(BeNumerically(">=", 1))
		Eventually(func() string { return statValue(s, "tracing.opentelemetry.reports_failed") }).ShouldNot(Equal("0"))
		Eventually(s.Stderr).Should(ContainSubstring("cannot export spans"))

		// A collector that is not there at all.
		port2, down := freePort(), freePort()
		s2 := Start(newDir(), tracingBootstrap(port2, up.port, "INBOUND",
			otelTracing(""), grpcCollectorCluster(down), ""))
		for i := range 5 {
			code, _ := tracedGet(port2, fmt.Sprintf("/down/%d", i), nil)
			Expect(code).To(Equal(200))
		}
		Eventually(func() string { return statValue(s2, "tracing.opentelemetry.reports_failed") }).ShouldNot(Equal("0"))
	})

	It("refuses other tracers by name, and tracing fields it does not implement, at load", func() {
		port := freePort()
		res, _ := validate("datadog.yaml", tracingBootstrap(port, 1, "INBOUND", `            provider:
              name: envoy.tracers.datadog
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.DatadogConfig
                collector_cluster: up
                service_name: x
`, "", ""))
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("DatadogConfig"))
		Expect(res.Stderr).To(ContainSubstring("tracing.provider.typed_config"))

		dynatrace := strings.Replace(otelTracing(""), "                service_name: edge-proxy\n", `                service_name: edge-proxy
                sampler: {name: envoy.tracers.opentelemetry.samplers.dynatrace, typed_config: {"@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.samplers.v3.DynatraceSamplerConfig, tenant: t, cluster_id: 1}}
`, 1)
		res, _ = validate("dynatrace.yaml", tracingBootstrap(port, 1, "INBOUND", dynatrace, grpcCollectorCluster(1), ""))
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("DynatraceSamplerConfig"))

		res, _ = validate("unknown-collector.yaml", tracingBootstrap(port, 1, "INBOUND", otelTracing(""), "", ""))
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr).To(ContainSubstring("otlp"))
	})
})

var _ = Describe("Tracing of HTTP/2 and gRPC requests", func() {
	It("tags a gRPC request's span with its path and the status from the trailers, an error for Unavailable", func() {
		collector, cport := startOTLPCollector()
		var seen atomic.Value
		seen.Store("")
		addr := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Store(r.Header.Get("Traceparent"))
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
			w.WriteHeader(200)
			w.Header().Set("Grpc-Status", "14")
			w.Header().Set("Grpc-Message", "backend down")
		}), true)
		_, upPort, _ := net.SplitHostPort(addr)
		var up int
		_, _ = fmt.Sscan(upPort, &up)
		port := freePort()
		cfg := tracingBootstrap(port, up, "INBOUND", otelTracing(""), grpcCollectorCluster(cport), "")
		cfg = strings.Replace(cfg, "  - name: up\n    type: STATIC\n", `  - name: up
    type: STATIC
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
`, 1)
		Start(newDir(), cfg)

		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		client := &http.Client{Transport: &http.Transport{Protocols: h2c}}
		req, err := http.NewRequest(http.MethodPost, listenerURL(port, "/pkg.Svc/Call"), strings.NewReader("\x00\x00\x00\x00\x00"))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Grpc-Timeout", "5S")
		req.Header.Set("Te", "trailers")
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		Expect(resp.Trailer.Get("Grpc-Status")).To(Equal("14"))

		Eventually(collector.received).Should(HaveLen(1))
		sp := collector.received()[0]
		for k, v := range map[string]string{
			"http.protocol":     "HTTP/2",
			"grpc.path":         "/pkg.Svc/Call",
			"grpc.content_type": "application/grpc",
			"grpc.timeout":      "5S",
			"grpc.status_code":  "14",
			"grpc.message":      "backend down",
			"http.status_code":  "200",
			"error":             "true",
			"request_size":      "5",
		} {
			Expect(spanAttr(sp, k)).To(Equal(v), "tag %s", k)
		}
		_, parent, _ := traceparentOf(seen.Load().(string))
		Expect(parent).To(Equal(hex.EncodeToString(sp.GetSpanId())))
	})
})
