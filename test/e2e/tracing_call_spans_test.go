package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// tracedServices are a gRPC authorization service and an external
// processor on one loopback port, which keep the traceparent each call
// carried in its metadata, by the request's path. The authorization
// service denies /deny paths and allows the others; the processor lets
// the request headers through unchanged.
type tracedServices struct {
	authv3.UnimplementedAuthorizationServer
	extprocsvc.UnimplementedExternalProcessorServer
	mu     sync.Mutex
	checks map[string]string
	procs  map[string]string
}

func (t *tracedServices) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	path := req.GetAttributes().GetRequest().GetHttp().GetPath()
	t.mu.Lock()
	t.checks[path] = strings.Join(md.Get("traceparent"), ",")
	t.mu.Unlock()
	if strings.HasPrefix(path, "/deny") {
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.PermissionDenied)}}, nil
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.OK)}}, nil
}

func (t *tracedServices) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	md, _ := metadata.FromIncomingContext(srv.Context())
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		h := req.GetRequestHeaders()
		if h == nil {
			continue
		}
		t.mu.Lock()
		t.procs[headerOf(h.GetHeaders(), ":path")] = strings.Join(md.Get("traceparent"), ",")
		t.mu.Unlock()
		if err := srv.Send(&extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{
			RequestHeaders: &extprocsvc.HeadersResponse{},
		}}); err != nil {
			return nil
		}
	}
}

// check and proc are the traceparent of a path's check and stream ("" when
// none came, or the call carried none).
func (t *tracedServices) check(path string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checks[path]
}

func (t *tracedServices) proc(path string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.procs[path]
}

func startTracedServices() (*tracedServices, int) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	t := &tracedServices{checks: map[string]string{}, procs: map[string]string{}}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, t)
	extprocsvc.RegisterExternalProcessorServer(srv, t)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return t, ln.Addr().(*net.TCPAddr).Port
}

// callSpansBootstrap is a traced listener (OpenTelemetry, every request
// sampled unless its context says otherwise) whose ext_authz and ext_proc
// filters call the services on svcPort: /quiet/ routes set both filters'
// emit_client_span false per route; filterEmit, when set, is both
// filters' own emit_client_span.
func callSpansBootstrap(port, upPort, svcPort, otlpPort int, filterEmit string) string {
	emit := ""
	if filterEmit != "" {
		emit = "\n              emit_client_span: " + filterEmit
	}
	return fmt.Sprintf(`
node: {id: spans-node, cluster: spans-cluster}
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
layered_runtime:
  layers:
  - name: static
    static_layer:
      tracing.opentelemetry.min_flush_spans: 1
      tracing.opentelemetry.flush_interval_ms: 100
static_resources:
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: up
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
  - name: services
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: services
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
%s
  listeners:
  - name: l
    traffic_direction: INBOUND
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: spans
          tracing:
            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                service_name: spans-proxy
                grpc_service: {envoy_grpc: {cluster_name: otlp}, timeout: 1s}
            random_sampling: {value: 100}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /quiet/}
                route: {cluster: up}
                typed_per_filter_config:
                  envoy.filters.http.ext_authz:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
                    check_settings: {emit_client_span: false}
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides: {emit_client_span: false}
              - match: {prefix: /loud/}
                route: {cluster: up}
                typed_per_filter_config:
                  envoy.filters.http.ext_authz:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
                    check_settings: {emit_client_span: true}
                  envoy.filters.http.ext_proc:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute
                    overrides: {emit_client_span: true}
              - match: {prefix: /}
                route: {cluster: up}
          http_filters:
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              grpc_service: {envoy_grpc: {cluster_name: services, authority: authz.internal}, timeout: 2s}
              transport_api_version: V3%s
          - name: envoy.filters.http.ext_proc
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor
              grpc_service: {envoy_grpc: {cluster_name: services}}
              message_timeout: 2s
              processing_mode: {request_header_mode: SEND, response_header_mode: SKIP}%s
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, upPort, svcPort, grpcCollectorCluster(otlpPort), port, emit, emit)
}

// spansOfTrace are the received spans of a trace (hex id).
func spansOfTrace(spans []*tracepb.Span, trace string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if hex.EncodeToString(s.GetTraceId()) == trace {
			out = append(out, s)
		}
	}
	return out
}

const (
	checkSpanName   = "async envoy.service.auth.v3.Authorization.Check egress"
	processSpanName = "async envoy.service.ext_proc.v3.ExternalProcessor.Process egress"
)

var _ = Describe("Tracing of the ext_authz and ext_proc calls", func() {
	var (
		collector *otlpCollector
		svcs      *tracedServices
		up        *tracedUpstream
		svcPort   int
		otlpPort  int
	)
	BeforeEach(func() {
		collector, otlpPort = startOTLPCollector()
		svcs, svcPort = startTracedServices()
		up = startTracedUpstream()
	})

	It("gives a traced request's check and processor stream client spans under its own, whose context the services receive", func() {
		port := freePort()
		Start(newDir(), callSpansBootstrap(port, up.port, svcPort, otlpPort, ""))

		code, _ := tracedGet(port, "/loud/a", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(200))
		Eventually(func() []*tracepb.Span { return spansOfTrace(collector.received(), incomingTrace) }).Should(HaveLen(3))
		spans := spansOfTrace(collector.received(), incomingTrace)
		ingress := spanNamed(spans, "ingress")
		check, proc := spanNamed(spans, checkSpanName), spanNamed(spans, processSpanName)
		Expect(ingress).NotTo(BeNil())
		Expect(check).NotTo(BeNil(), "spans %v", spans)
		Expect(proc).NotTo(BeNil(), "spans %v", spans)
		Expect(hex.EncodeToString(ingress.GetParentSpanId())).To(Equal(incomingSpan))
		for _, sp := range []*tracepb.Span{check, proc} {
			Expect(sp.GetParentSpanId()).To(Equal(ingress.GetSpanId()), sp.GetName())
			Expect(sp.GetKind()).To(Equal(tracepb.Span_SPAN_KIND_CLIENT), sp.GetName())
			Expect(spanAttr(sp, "upstream_cluster")).To(Equal("services"))
			Expect(spanAttr(sp, "component")).To(Equal("proxy"))
		}
		// The authority the envoy_grpc service sets; the cluster's
		// name without one.
		Expect(spanAttr(check, "upstream_address")).To(Equal("authz.internal"))
		Expect(spanAttr(proc, "upstream_address")).To(Equal("services"))
		Expect(spanAttr(check, "grpc.status_code")).To(Equal("0"))
		Expect(spanAttr(check, "ext_authz_status")).To(Equal("ext_authz_ok"))
		Expect(spanAttr(check, "error")).To(BeEmpty())

		// Each service continues the trace from its call's span.
		trace, parent, flags := traceparentOf(svcs.check("/loud/a"))
		Expect([]string{trace, parent, flags}).To(Equal([]string{incomingTrace, hex.EncodeToString(check.GetSpanId()), "01"}))
		trace, parent, flags = traceparentOf(svcs.proc("/loud/a"))
		Expect([]string{trace, parent, flags}).To(Equal([]string{incomingTrace, hex.EncodeToString(proc.GetSpanId()), "01"}))
		// The upstream's parent is still the request's span.
		_, parent, _ = traceparentOf(up.headers("/loud/a").Get("Traceparent"))
		Expect(parent).To(Equal(hex.EncodeToString(ingress.GetSpanId())))

		// A denied check: the call is OK, the decision tagged.
		const deniedTrace = "0af7651916cd43dd8448eb211c80319c"
		code, _ = tracedGet(port, "/deny", http.Header{"Traceparent": {"00-" + deniedTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(403))
		Eventually(func() *tracepb.Span {
			return spanNamed(spansOfTrace(collector.received(), deniedTrace), checkSpanName)
		}).ShouldNot(BeNil())
		denied := spanNamed(spansOfTrace(collector.received(), deniedTrace), checkSpanName)
		Expect(spanAttr(denied, "ext_authz_status")).To(Equal("ext_authz_unauthorized"))
		Expect(spanAttr(denied, "grpc.status_code")).To(Equal("0"))
	})

	It("sends the request span's own context, and reports no call span, with emit_client_span false per route or per filter", func() {
		port := freePort()
		Start(newDir(), callSpansBootstrap(port, up.port, svcPort, otlpPort, ""))
		code, _ := tracedGet(port, "/quiet/a", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(200))
		Eventually(func() *tracepb.Span {
			return spanNamed(spansOfTrace(collector.received(), incomingTrace), "ingress")
		}).ShouldNot(BeNil())
		ingress := spanNamed(spansOfTrace(collector.received(), incomingTrace), "ingress")
		for _, tp := range []string{svcs.check("/quiet/a"), svcs.proc("/quiet/a")} {
			trace, parent, flags := traceparentOf(tp)
			Expect([]string{trace, parent, flags}).To(Equal([]string{incomingTrace, hex.EncodeToString(ingress.GetSpanId()), "01"}))
		}

		// The filters' own false; a later request's spans arriving first
		// show the call spans were never sent (they would have been
		// exported before the ingress span, which ends last).
		port2 := freePort()
		collector2, otlpPort2 := startOTLPCollector()
		Start(newDir(), callSpansBootstrap(port2, up.port, svcPort, otlpPort2, "false"))
		code, _ = tracedGet(port2, "/b", nil)
		Expect(code).To(Equal(200))
		Eventually(collector2.received).Should(HaveLen(1))
		root := collector2.received()[0]
		Expect(root.GetName()).To(Equal("ingress"))
		for _, tp := range []string{svcs.check("/b"), svcs.proc("/b")} {
			trace, parent, _ := traceparentOf(tp)
			Expect(trace).To(Equal(hex.EncodeToString(root.GetTraceId())))
			Expect(parent).To(Equal(hex.EncodeToString(root.GetSpanId())))
		}
		Expect(spanNamed(collector.received(), checkSpanName)).To(BeNil())
		Expect(spanNamed(collector2.received(), checkSpanName)).To(BeNil())
		Expect(spanNamed(collector2.received(), processSpanName)).To(BeNil())

		// The route's true wins over the filter's false.
		code, _ = tracedGet(port2, "/loud/b", nil)
		Expect(code).To(Equal(200))
		Eventually(func() *tracepb.Span { return spanNamed(collector2.received(), checkSpanName) }).ShouldNot(BeNil())
		Eventually(func() *tracepb.Span { return spanNamed(collector2.received(), processSpanName) }).ShouldNot(BeNil())
	})

	It("passes an unsampled request's context on to the services, marked not sampled, and reports nothing", func() {
		port := freePort()
		Start(newDir(), callSpansBootstrap(port, up.port, svcPort, otlpPort, ""))
		code, _ := tracedGet(port, "/loud/unsampled", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-00"}})
		Expect(code).To(Equal(200))
		checkTP, procTP := svcs.check("/loud/unsampled"), svcs.proc("/loud/unsampled")
		trace, checkParent, flags := traceparentOf(checkTP)
		Expect(trace).To(Equal(incomingTrace))
		Expect(flags).To(Equal("00"))
		trace, procParent, flags := traceparentOf(procTP)
		Expect(trace).To(Equal(incomingTrace))
		Expect(flags).To(Equal("00"))
		// Each call has its own (unsampled) span, a child of the request's,
		// whose id the upstream got.
		_, upParent, _ := traceparentOf(up.headers("/loud/unsampled").Get("Traceparent"))
		Expect(checkParent).NotTo(Equal(upParent))
		Expect(procParent).NotTo(Equal(upParent))
		Expect(checkParent).NotTo(Equal(procParent))
		Expect(checkParent).NotTo(Equal(incomingSpan))

		// A sampled request afterwards is exported alone.
		code, _ = tracedGet(port, "/loud/sampled", nil)
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(3))
		Expect(spansOfTrace(collector.received(), incomingTrace)).To(BeEmpty())
	})
})

// httpCheckSpansBootstrap is a traced listener (OpenTelemetry, every
// request sampled unless its context says otherwise) whose ext_authz
// filter asks the HTTP authorization server on authzPort (cluster
// authz_http, path_prefix /auth, a 1 s timeout): /quiet/ routes set
// emit_client_span false.
func httpCheckSpansBootstrap(port, upPort, authzPort, otlpPort int) string {
	return fmt.Sprintf(`
node: {id: spans-node, cluster: spans-cluster}
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
layered_runtime:
  layers:
  - name: static
    static_layer:
      tracing.opentelemetry.min_flush_spans: 1
      tracing.opentelemetry.flush_interval_ms: 100
static_resources:
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: up
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
  - name: authz_http
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: authz_http
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
%s
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: spans
          tracing:
            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                service_name: spans-proxy
                grpc_service: {envoy_grpc: {cluster_name: otlp}, timeout: 1s}
            random_sampling: {value: 100}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /quiet/}
                route: {cluster: up}
                typed_per_filter_config:
                  envoy.filters.http.ext_authz:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
                    check_settings: {emit_client_span: false}
              - match: {prefix: /}
                route: {cluster: up}
          http_filters:
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              http_service: {server_uri: {uri: "http://authz", cluster: authz_http, timeout: 1s}, path_prefix: /auth}
              transport_api_version: V3
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, upPort, authzPort, grpcCollectorCluster(otlpPort), port)
}

const httpCheckSpanName = "async authz_http egress"

var _ = Describe("Tracing of the ext_authz HTTP service's check", func() {
	var (
		collector *otlpCollector
		authz     *httpAuthz
		up        *tracedUpstream
		authzPort int
		otlpPort  int
	)
	BeforeEach(func() {
		collector, otlpPort = startOTLPCollector()
		authz = &httpAuthz{}
		addr := httpTestUpstream(authz, false)
		_, p, _ := net.SplitHostPort(addr)
		_, _ = fmt.Sscan(p, &authzPort)
		up = startTracedUpstream()
	})

	It("gives a traced request's check a client span under its own, tagged as Envoy's asynchronous client, whose context the service receives", func() {
		port := freePort()
		Start(newDir(), httpCheckSpansBootstrap(port, up.port, authzPort, otlpPort))

		code, _ := tracedGet(port, "/allow/a", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(200))
		Eventually(func() []*tracepb.Span { return spansOfTrace(collector.received(), incomingTrace) }).Should(HaveLen(2))
		spans := spansOfTrace(collector.received(), incomingTrace)
		ingress, check := spanNamed(spans, "ingress"), spanNamed(spans, httpCheckSpanName)
		Expect(ingress).NotTo(BeNil())
		Expect(check).NotTo(BeNil(), "spans %v", spans)
		Expect(check.GetParentSpanId()).To(Equal(ingress.GetSpanId()))
		Expect(check.GetKind()).To(Equal(tracepb.Span_SPAN_KIND_CLIENT))
		authzAddr := fmt.Sprintf("127.0.0.1:%d", authzPort)
		for k, v := range map[string]string{
			"ext_authz_http_status": "OK", "ext_authz_status": "ext_authz_ok",
			"http.protocol": "HTTP/1.1", "upstream_address": authzAddr, "peer.address": authzAddr,
			"component": "proxy", "upstream_cluster": "authz_http", "upstream_cluster.name": "authz_http",
			"http.status_code": "200", "response_flags": "-", "error": "",
		} {
			Expect(spanAttr(check, k)).To(Equal(v), k)
		}
		// The service continues the trace from the check's span; the
		// upstream's parent is still the request's span.
		trace, parent, flags := traceparentOf(authz.traceparent("/auth/allow/a"))
		Expect([]string{trace, parent, flags}).To(Equal([]string{incomingTrace, hex.EncodeToString(check.GetSpanId()), "01"}))
		_, parent, _ = traceparentOf(up.headers("/allow/a").Get("Traceparent"))
		Expect(parent).To(Equal(hex.EncodeToString(ingress.GetSpanId())))

		// A denial: the answer's status and the decision tagged.
		const deniedTrace = "0af7651916cd43dd8448eb211c80319c"
		code, _ = tracedGet(port, "/deny", http.Header{"Traceparent": {"00-" + deniedTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(403))
		Eventually(func() *tracepb.Span {
			return spanNamed(spansOfTrace(collector.received(), deniedTrace), httpCheckSpanName)
		}).ShouldNot(BeNil())
		denied := spanNamed(spansOfTrace(collector.received(), deniedTrace), httpCheckSpanName)
		Expect(spanAttr(denied, "ext_authz_http_status")).To(Equal("Forbidden"))
		Expect(spanAttr(denied, "ext_authz_status")).To(Equal("ext_authz_unauthorized"))
		Expect(spanAttr(denied, "http.status_code")).To(Equal("403"))
		Expect(spanAttr(denied, "error")).To(BeEmpty())

		// The timeout: the local reply Envoy's client makes of it, an error.
		const hungTrace = "1af7651916cd43dd8448eb211c80319c"
		code, _ = tracedGet(port, "/hang", http.Header{"Traceparent": {"00-" + hungTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(403))
		Eventually(func() *tracepb.Span {
			return spanNamed(spansOfTrace(collector.received(), hungTrace), httpCheckSpanName)
		}).ShouldNot(BeNil())
		hung := spanNamed(spansOfTrace(collector.received(), hungTrace), httpCheckSpanName)
		Expect(spanAttr(hung, "ext_authz_http_status")).To(Equal("Gateway Timeout"))
		Expect(spanAttr(hung, "http.status_code")).To(Equal("504"))
		Expect(spanAttr(hung, "response_flags")).To(Equal("UT"))
		Expect(spanAttr(hung, "error")).To(Equal("true"))
	})

	It("sends the request span's own context and reports no check span with emit_client_span false, and an unsampled request's own unsampled context", func() {
		port := freePort()
		Start(newDir(), httpCheckSpansBootstrap(port, up.port, authzPort, otlpPort))
		code, _ := tracedGet(port, "/quiet/a", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(200))
		Eventually(func() *tracepb.Span {
			return spanNamed(spansOfTrace(collector.received(), incomingTrace), "ingress")
		}).ShouldNot(BeNil())
		ingress := spanNamed(spansOfTrace(collector.received(), incomingTrace), "ingress")
		trace, parent, flags := traceparentOf(authz.traceparent("/auth/quiet/a"))
		Expect([]string{trace, parent, flags}).To(Equal([]string{incomingTrace, hex.EncodeToString(ingress.GetSpanId()), "01"}))
		// The check's span would have been exported before the ingress
		// span, which ends last.
		Expect(spansOfTrace(collector.received(), incomingTrace)).To(HaveLen(1))

		const unsampledTrace = "2af7651916cd43dd8448eb211c80319c"
		code, _ = tracedGet(port, "/unsampled", http.Header{"Traceparent": {"00-" + unsampledTrace + "-" + incomingSpan + "-00"}})
		Expect(code).To(Equal(200))
		trace, checkParent, flags := traceparentOf(authz.traceparent("/auth/unsampled"))
		Expect([]string{trace, flags}).To(Equal([]string{unsampledTrace, "00"}))
		_, upParent, _ := traceparentOf(up.headers("/unsampled").Get("Traceparent"))
		Expect(checkParent).NotTo(Equal(upParent))
		Expect(checkParent).NotTo(Equal(incomingSpan))

		// A sampled request afterwards is exported alone.
		code, _ = tracedGet(port, "/allow/b", nil)
		Expect(code).To(Equal(200))
		Eventually(func() *tracepb.Span { return spanNamed(collector.received(), httpCheckSpanName) }).ShouldNot(BeNil())
		Expect(spansOfTrace(collector.received(), unsampledTrace)).To(BeEmpty())
	})
})
