package e2e

import (
	"net/http"
	"os"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// withUpstreamMetadata gives tracingBootstrap's cluster "up" cluster
// metadata and its endpoint endpoint metadata.
func withUpstreamMetadata(cfg string) string {
	GinkgoHelper()
	out := strings.Replace(cfg, "  - name: up\n    type: STATIC\n",
		"  - name: up\n    type: STATIC\n    metadata: {filter_metadata: {team: {owner: payments, tier: 2}}}\n", 1)
	i := strings.Index(out, "endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ")
	Expect(i).To(BeNumerically(">=", 0))
	j := i + strings.Index(out[i:], "}}}}")
	out = out[:j] + "}}}, metadata: {filter_metadata: {envoy.lb: {zone: zone-a}}}}" + out[j+len("}}}}"):]
	Expect(out).NotTo(Equal(cfg))
	return out
}

var _ = Describe("Tracing options: verbose, operation names, metadata tags", func() {
	It("names spans with operation and upstream_operation, logs timings as Zipkin annotations, and tags spans from metadata", func() {
		collector := startZipkinCollector()
		up := startTracedUpstream()
		port := freePort()
		tracingCfg := zipkinTracing("") + `            verbose: true
            spawn_upstream_span: true
            operation: "%REQ(:METHOD)% %REQ_WITHOUT_QUERY(:PATH)%%REQ(:PATH)% %RESPONSE_CODE% %UPSTREAM_METADATA(envoy.lb:zone)% %REQ(X-NONE)%"
            upstream_operation: "to %UPSTREAM_CLUSTER% in %UPSTREAM_METADATA(envoy.lb:zone)%"
            custom_tags:
            - {tag: owner, metadata: {kind: {cluster: {}}, metadata_key: {key: team, path: [{key: owner}]}}}
            - {tag: tier, metadata: {kind: {cluster: {}}, metadata_key: {key: team, path: [{key: tier}]}}}
            - {tag: zone, metadata: {kind: {host: {}}, metadata_key: {key: envoy.lb, path: [{key: zone}]}}}
            - {tag: dynamic, metadata: {kind: {request: {}}, metadata_key: {key: ns, path: [{key: k}]}, default_value: none}}
            - {tag: absent, metadata: {kind: {host: {}}, metadata_key: {key: envoy.lb, path: [{key: nope}]}}}
`
		// REQ_WITHOUT_QUERY needs a formatter, which operation has none
		// of: the load fails, as in Envoy.
		res, _ := validate("rwq.yaml", withUpstreamMetadata(tracingBootstrap(port, up.port, "INBOUND", tracingCfg,
			httpCollectorCluster("zipkin", collector.port), "")))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("tracing.operation: at offset 15: command operator %REQ_WITHOUT_QUERY% needs the formatter extension"))

		tracingCfg = strings.Replace(tracingCfg, "%REQ_WITHOUT_QUERY(:PATH)%", "", 1)
		// The route's own operation wins over the connection manager's.
		cfg := strings.Replace(tracingBootstrap(port, up.port, "INBOUND", tracingCfg, httpCollectorCluster("zipkin", collector.port), ""),
			"                  random_sampling: {numerator: 100}\n",
			"                  random_sampling: {numerator: 100}\n                  operation: \"route %ROUTE_NAME%%RESPONSE_CODE%\"\n", 1)
		Expect(cfg).To(ContainSubstring("operation: \"route "))
		s := Start(newDir(), withUpstreamMetadata(cfg))
		code, _ := tracedGet(port, "/checkout?x=1", nil)
		Expect(code).To(Equal(200))

		Eventually(collector.received).Should(HaveLen(2))
		server := zipkinByName(collector.received(), "GET /checkout?x=1 200 zone-a ")
		Expect(server).NotTo(BeNil(), "the operation wins over the route's decorator: %+v", collector.received())
		Expect(server.Kind).To(Equal("SERVER"))
		Expect(server.Tags).To(HaveKeyWithValue("owner", "payments"))
		Expect(server.Tags).To(HaveKeyWithValue("tier", "2"))
		Expect(server.Tags).To(HaveKeyWithValue("zone", "zone-a"))
		Expect(server.Tags).To(HaveKeyWithValue("dynamic", "none"), "no filter sets dynamic metadata: the default")
		Expect(server.Tags).NotTo(HaveKey("absent"))
		var events []string
		for _, a := range server.Annotations {
			events = append(events, a.Value)
			Expect(a.Timestamp).To(BeNumerically(">=", server.Timestamp))
			// Within the span, give or take the microsecond both round to.
			Expect(a.Timestamp).To(BeNumerically("<=", server.Timestamp+server.Duration+1))
		}
		Expect(events).To(Equal([]string{"first_upstream_rx_byte_received", "last_downstream_tx_byte_sent"}))

		child := zipkinByName(collector.received(), "to up in zone-a")
		Expect(child).NotTo(BeNil(), "%+v", collector.received())
		Expect(child.Kind).To(Equal("CLIENT"))
		Expect(child.ParentID).To(Equal(server.ID))
		Expect(child.Tags).To(HaveKeyWithValue("zone", "zone-a"))
		Expect(child.Annotations).To(HaveLen(1))
		Expect(child.Annotations[0].Value).To(Equal("first_upstream_rx_byte_received"))
		Expect(s.Stderr()).NotTo(ContainSubstring("panic"))

		code, _ = tracedGet(port, "/route-sampled", nil)
		Expect(code).To(Equal(200))
		Eventually(func() *zipkinSpan { return zipkinByName(collector.received(), "route 200") }).ShouldNot(BeNil())
		upstreamSpans := 0
		for _, sp := range collector.received() {
			if sp.Name == "to up in zone-a" {
				upstreamSpans++
			}
		}
		Expect(upstreamSpans).To(Equal(2), "the connection manager's upstream_operation still names the route's upstream span")
	})

	It("exports every span with the always_on sampler and merges static and OTEL_RESOURCE_ATTRIBUTES attributes into the resource, without span logs", func() {
		Expect(os.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging,service.name=from-env,bad,=x,team=core")).To(Succeed())
		DeferCleanup(os.Unsetenv, "OTEL_RESOURCE_ATTRIBUTES")
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		tracingCfg := strings.Replace(otelTracing(`            random_sampling: {value: 0}
            verbose: true
`), "                service_name: edge-proxy\n", `                service_name: edge-proxy
                resource_detectors:
                - name: envoy.tracers.opentelemetry.resource_detectors.static_config
                  typed_config:
                    "@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.resource_detectors.v3.StaticConfigResourceDetectorConfig
                    attributes: {team: static, region: eu, empty: ""}
                - name: envoy.tracers.opentelemetry.resource_detectors.environment
                  typed_config: {"@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.resource_detectors.v3.EnvironmentResourceDetectorConfig}
                sampler:
                  name: envoy.tracers.opentelemetry.samplers.always_on
                  typed_config: {"@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.samplers.v3.AlwaysOnSamplerConfig}
`, 1)
		Expect(tracingCfg).To(ContainSubstring("always_on"))
		proxy := Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", tracingCfg, grpcCollectorCluster(cport), ""))
		version := proxy.ServerInfo().GetVersion()
		Expect(version).NotTo(BeEmpty())

		// Random sampling is 0 and the client says "not sampled": the
		// sampler samples both anyway.
		code, _ := tracedGet(port, "/checkout", nil)
		Expect(code).To(Equal(200))
		code, _ = tracedGet(port, "/quiet", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-00"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(2))
		Expect(spanNamed(collector.received(), "quiet").GetTraceId()).To(HaveLen(16))
		Expect(up.headers("/quiet").Get("Traceparent")).To(HaveSuffix("-01"), "the upstream sees the sampled flag the sampler set")
		for _, sp := range collector.received() {
			Expect(sp.GetEvents()).To(BeEmpty(), "OpenTelemetry drops span logs, as Envoy's tracer does")
		}
		attrs := collector.resourceAttributes()
		Expect(attrs).NotTo(BeEmpty())
		Expect(collector.scopeNames()).To(HaveEach("envoy "+version), "Envoy's instrumentation scope, with the version /server_info gives")
		Expect(attrs[0]).To(Equal(map[string]string{
			"service.name":           "from-env",
			"deployment.environment": "staging",
			"team":                   "core", // the later detector wins
			"region":                 "eu",
			"telemetry.sdk.language": "go",
			"telemetry.sdk.name":     "envoy",
			"telemetry.sdk.version":  version,
		}))
	})

	It("exports custom tags with a value_type as typed OpenTelemetry attributes, falling back to the string", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		tracingCfg := otelTracing(`            - {tag: retries, literal: {value: "42"}, value_type: INT}
            - {tag: ratio, request_header: {name: x-ratio}, value_type: DOUBLE}
            - {tag: cached, request_header: {name: x-cached}, value_type: BOOL}
            - {tag: broken, literal: {value: forty}, value_type: INT}
            - {tag: label, literal: {value: "7"}, value_type: STRING}
            random_sampling: {value: 100}
`)
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", tracingCfg, grpcCollectorCluster(cport), ""))
		code, _ := tracedGet(port, "/typed", http.Header{"X-Ratio": {"0.25"}, "X-Cached": {"yes"}})
		Expect(code).To(Equal(200))
		Eventually(collector.received).Should(HaveLen(1))
		values := map[string]*commonpb.AnyValue{}
		for _, a := range collector.received()[0].GetAttributes() {
			values[a.GetKey()] = a.GetValue()
		}
		Expect(values["retries"].GetValue()).To(Equal(&commonpb.AnyValue_IntValue{IntValue: 42}))
		Expect(values["ratio"].GetValue()).To(Equal(&commonpb.AnyValue_DoubleValue{DoubleValue: 0.25}))
		Expect(values["cached"].GetValue()).To(Equal(&commonpb.AnyValue_BoolValue{BoolValue: true}))
		Expect(values["broken"].GetValue()).To(Equal(&commonpb.AnyValue_StringValue{StringValue: "forty"}), "a value that does not parse stays a string")
		Expect(values["label"].GetValue()).To(Equal(&commonpb.AnyValue_StringValue{StringValue: "7"}))
		Expect(values["team"].GetValue()).To(Equal(&commonpb.AnyValue_StringValue{StringValue: "payments"}))
	})

	It("samples by trace id with the trace_id_ratio_based sampler, whatever the incoming flag says", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		tracingCfg := strings.Replace(otelTracing(""), "                service_name: edge-proxy\n", `                service_name: edge-proxy
                sampler:
                  name: envoy.tracers.opentelemetry.samplers.trace_id_ratio_based
                  typed_config:
                    "@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.samplers.v3.TraceIdRatioBasedSamplerConfig
                    sampling_percentage: {numerator: 50}
                set_instrumentation_scope: false
                set_telemetry_sdk_resource_attributes: false
`, 1)
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", tracingCfg, grpcCollectorCluster(cport), ""))

		// Envoy reads the trace id's first 8 bytes as a little-endian
		// number: 99 here (above 50, dropped although the client sampled
		// it), 5 below (sampled although the client did not).
		dropped, kept := "63000000000000001111111111111111", "05000000000000002222222222222222"
		code, _ := tracedGet(port, "/quiet", http.Header{"Traceparent": {"00-" + dropped + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/quiet").Get("Traceparent")).To(HavePrefix("00-"+dropped+"-"), "the context still propagates")
		Expect(up.headers("/quiet").Get("Traceparent")).To(HaveSuffix("-00"))
		code, _ = tracedGet(port, "/checkout", http.Header{"Traceparent": {"00-" + kept + "-" + incomingSpan + "-00"}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/checkout").Get("Traceparent")).To(HaveSuffix("-01"))
		// Spans are exported one by one, in order: the dropped one would
		// have arrived first.
		Eventually(func() *tracepb.Span { return spanNamed(collector.received(), "checkout") }).ShouldNot(BeNil())
		Expect(collector.received()).To(HaveLen(1))
		Expect(collector.scopeNames()).To(Equal([]string{""}), "set_instrumentation_scope: false leaves the scope out")
		Expect(collector.resourceAttributes()).To(Equal([]map[string]string{{"service.name": "edge-proxy"}}), "set_telemetry_sdk_resource_attributes: false leaves telemetry.sdk.* out")
	})

	It("follows the incoming flag and samples root spans with the wrapped sampler under parent_based", func() {
		collector, cport := startOTLPCollector()
		up := startTracedUpstream()
		port := freePort()
		tracingCfg := strings.Replace(otelTracing("            random_sampling: {value: 0}\n"), "                service_name: edge-proxy\n", `                service_name: edge-proxy
                sampler:
                  name: envoy.tracers.opentelemetry.samplers.parent_based
                  typed_config:
                    "@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.samplers.v3.ParentBasedSamplerConfig
                    wrapped_sampler:
                      name: envoy.tracers.opentelemetry.samplers.always_on
                      typed_config: {"@type": type.googleapis.com/envoy.extensions.tracers.opentelemetry.samplers.v3.AlwaysOnSamplerConfig}
`, 1)
		Start(newDir(), tracingBootstrap(port, up.port, "INBOUND", tracingCfg, grpcCollectorCluster(cport), ""))

		code, _ := tracedGet(port, "/root", nil)
		Expect(code).To(Equal(200))
		Expect(up.headers("/root").Get("Traceparent")).To(HaveSuffix("-01"), "a root span: always_on samples it, random_sampling 0 notwithstanding")
		code, _ = tracedGet(port, "/quiet", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-00"}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/quiet").Get("Traceparent")).To(HaveSuffix("-00"), "an unsampled parent is followed")
		code, _ = tracedGet(port, "/checkout", http.Header{"Traceparent": {"00-" + incomingTrace + "-" + incomingSpan + "-01"}})
		Expect(code).To(Equal(200))
		Expect(up.headers("/checkout").Get("Traceparent")).To(HaveSuffix("-01"))
		Eventually(func() *tracepb.Span { return spanNamed(collector.received(), "checkout") }).ShouldNot(BeNil())
		Expect(collector.received()).To(HaveLen(2), "the root span and the sampled child")
	})
})
