package e2e

import (
	"context"
	"net"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
)

// otlpMetricsReceiver is an OpenTelemetry collector's metrics service: it
// keeps every export request it receives.
type otlpMetricsReceiver struct {
	colmetricspb.UnimplementedMetricsServiceServer
	mu       sync.Mutex
	requests []*colmetricspb.ExportMetricsServiceRequest
}

func (r *otlpMetricsReceiver) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	r.add(req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

func (r *otlpMetricsReceiver) add(req *colmetricspb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
}

func (r *otlpMetricsReceiver) exports() []*colmetricspb.ExportMetricsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*colmetricspb.ExportMetricsServiceRequest(nil), r.requests...)
}

// points returns the data points of the named metric over every export,
// in order; with attrs, only those whose attributes include them (a
// tag-extracted name is shared: http.downstream_rq_total is the admin's
// and each connection manager's).
func (r *otlpMetricsReceiver) points(name string, attrs ...string) []*metricsv1.NumberDataPoint {
	var out []*metricsv1.NumberDataPoint
	for _, req := range r.exports() {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					if m.GetName() != name {
						continue
					}
					for _, p := range append(m.GetSum().GetDataPoints(), m.GetGauge().GetDataPoints()...) {
						if hasAttributes(p.GetAttributes(), attrs) {
							out = append(out, p)
						}
					}
				}
			}
		}
	}
	return out
}

// hasAttributes reports whether kvs has every key and string value of
// pairs (key, value, key, value...).
func hasAttributes(kvs []*commonpb.KeyValue, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if attribute(kvs, pairs[i]).GetStringValue() != pairs[i+1] {
			return false
		}
	}
	return true
}

// lastValue is the value of the named metric's last point (with attrs,
// see points), -1 when none was exported.
func (r *otlpMetricsReceiver) lastValue(name string, attrs ...string) int64 {
	p := r.points(name, attrs...)
	if len(p) == 0 {
		return -1
	}
	return p[len(p)-1].GetAsInt()
}

// otelSink is a stats_sinks entry of the OpenTelemetry sink with fields.
func otelSink(fields string) string {
	return `{name: envoy.stat_sinks.open_telemetry, typed_config: ` +
		withType("type.googleapis.com/envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig", fields) + `}`
}

var _ = Describe("The OpenTelemetry stats sink", func() {
	It("exports the used stats to a MetricsService through its cluster, and the last counts at shutdown", func() {
		receiver := &otlpMetricsReceiver{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := grpc.NewServer()
		colmetricspb.RegisterMetricsServiceServer(srv, receiver)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)

		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Top:      `{stats_flush_interval: 0.2s, stats_sinks: [` + otelSink(`{grpc_service: {envoy_grpc: {cluster_name: otlp}}, prefix: edge}`) + `]}`,
			HCM:      `{stat_prefix: otelstats}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: ln.Addr().(*net.TCPAddr).Port, Extra: h2cOptions()}},
		}.YAML())
		for range 3 {
			Expect(get(port, "/", nil)).To(Equal(200))
		}
		hcm := []string{"proxy.http_conn_manager_prefix", "otelstats"}
		// Tag-extracted names, the tags as attributes, cumulative counts.
		Eventually(func() int64 { return receiver.lastValue("edge.http.downstream_rq_total", hcm...) }).Should(Equal(int64(3)))
		res := receiver.exports()[0].GetResourceMetrics()[0].GetResource().GetAttributes()
		Expect(attribute(res, "service.name").GetStringValue()).To(Equal("unknown_service:envoy"))
		Expect(receiver.lastValue("edge.server.live")).To(Equal(int64(1)))
		// The sink's own channel is counted like any cluster's.
		Expect(statValue(s, "cluster.otlp.upstream_cx_total")).To(Equal("1"))

		// The server's last flush reaches the collector before it exits.
		Expect(get(port, "/at-exit", nil)).To(Equal(200))
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Expect(receiver.lastValue("edge.http.downstream_rq_total", hcm...)).To(Equal(int64(4)))
	})

	It("posts OTLP/HTTP protobuf requests with counter deltas and full names", func() {
		receiver := &otlpMetricsReceiver{}
		endpoint, collectorPort := startOTLPHTTP(func() *colmetricspb.ExportMetricsServiceRequest { return &colmetricspb.ExportMetricsServiceRequest{} }, receiver.add)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Top: `{stats_flush_interval: 0.2s, stats_sinks: [` + otelSink(`{http_service: {http_uri: {uri: "http://collector", cluster: otlp, timeout: 1s}},
				report_counters_as_deltas: true, use_tag_extracted_name: false, emit_tags_as_attributes: false}`) + `]}`,
			HCM:      `{stat_prefix: otelhttp}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: collectorPort}},
		}.YAML())
		for range 2 {
			Expect(get(port, "/", nil)).To(Equal(200))
		}
		// Deltas: the points over the exports add up to the requests, and
		// each export has only what happened since the previous one.
		sum := func() int64 {
			var n int64
			for _, p := range receiver.points("http.otelhttp.downstream_rq_total") {
				n += p.GetAsInt()
			}
			return n
		}
		Eventually(sum).Should(Equal(int64(2)))
		Expect(get(port, "/", nil)).To(Equal(200))
		Eventually(sum).Should(Equal(int64(3)))
		pts := receiver.points("http.otelhttp.downstream_rq_total")
		Expect(pts[len(pts)-1].GetAsInt()).To(Equal(int64(1)))
		Expect(pts[len(pts)-1].GetAttributes()).To(BeEmpty())
		first := endpoint.got()[0]
		Expect(first.path).To(Equal("/v1/metrics"))
		Expect(first.contentType).To(Equal("application/x-protobuf"))
	})

	It("refuses custom_metric_conversions and a sink without a service, with their paths", func() {
		for sink, want := range map[string]string{
			`{grpc_service: {envoy_grpc: {cluster_name: otlp}}, custom_metric_conversions: {}}`: "stats_sinks[0].typed_config.custom_metric_conversions: not supported by Outrigger",
			`{prefix: p}`: "stats_sinks[0].typed_config.protocol_specifier: value is required",
		} {
			r, _ := validate("b.yaml", proxySpec{
				Port:     freePort(),
				Top:      `{stats_sinks: [` + otelSink(sink) + `]}`,
				Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
				Clusters: []proxyCluster{{Name: "otlp", Port: freePort(), Extra: h2cOptions()}},
			}.YAML())
			Expect(r.ExitCode).To(Equal(1))
			Expect(r.Stderr).To(ContainSubstring(want))
		}
	})
})
