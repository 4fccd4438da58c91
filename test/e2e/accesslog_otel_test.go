package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
)

// otlpLogsReceiver is an OpenTelemetry collector's logs service: it keeps
// every export request it receives.
type otlpLogsReceiver struct {
	collogspb.UnimplementedLogsServiceServer
	mu       sync.Mutex
	requests []*collogspb.ExportLogsServiceRequest
}

func (r *otlpLogsReceiver) Export(_ context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// exports returns the requests received so far.
func (r *otlpLogsReceiver) exports() []*collogspb.ExportLogsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*collogspb.ExportLogsServiceRequest(nil), r.requests...)
}

// records returns every log record received so far, in order.
func (r *otlpLogsReceiver) records() []*logspb.LogRecord {
	var out []*logspb.LogRecord
	for _, req := range r.exports() {
		for _, rl := range req.GetResourceLogs() {
			for _, sl := range rl.GetScopeLogs() {
				out = append(out, sl.GetLogRecords()...)
			}
		}
	}
	return out
}

// bodies returns the string bodies of every record received so far.
func (r *otlpLogsReceiver) bodies() []string {
	var out []string
	for _, rec := range r.records() {
		out = append(out, rec.GetBody().GetStringValue())
	}
	return out
}

// bodiesOf returns the string bodies of the records received from the
// logger named logName (the log_name resource attribute).
func (r *otlpLogsReceiver) bodiesOf(logName string) []string {
	var out []string
	for _, req := range r.exports() {
		for _, rl := range req.GetResourceLogs() {
			if attribute(rl.GetResource().GetAttributes(), "log_name").GetStringValue() != logName {
				continue
			}
			for _, sl := range rl.GetScopeLogs() {
				for _, rec := range sl.GetLogRecords() {
					out = append(out, rec.GetBody().GetStringValue())
				}
			}
		}
	}
	return out
}

// startLogsReceiver serves a logs receiver on a loopback port until the
// spec ends.
func startLogsReceiver() (*otlpLogsReceiver, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	r := &otlpLogsReceiver{}
	srv := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return r, ln.Addr().(*net.TCPAddr).Port
}

// attribute is the value of the attribute key of kvs, nil when absent.
func attribute(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// otelLog is an access_log entry of the OpenTelemetry logger with the
// fields of the YAML flow mapping fields, exporting to cluster otlp.
func otelLog(fields string) string {
	GinkgoHelper()
	return `{name: envoy.access_loggers.open_telemetry, typed_config: ` +
		withType("type.googleapis.com/envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig", fields) + `}`
}

// otelLogFields are the logger's fields of the specs: a body and
// attributes made from format strings, and a resource attribute.
const otelLogFields = `{grpc_service: {envoy_grpc: {cluster_name: otlp}}, log_name: edge, buffer_flush_interval: 0.1s,
	body: {string_value: "%REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE%"},
	attributes: {values: [
		{key: tenant, value: {string_value: "%REQ(X-TENANT)%"}},
		{key: http, value: {kvlist_value: {values: [{key: protocol, value: {string_value: "%PROTOCOL%"}}]}}},
		{key: sizes, value: {array_value: {values: [{string_value: "%BYTES_RECEIVED%"}, {string_value: "%BYTES_SENT%"}]}}}]},
	resource_attributes: {values: [{key: region, value: {string_value: eu-1}}]}}`

var _ = Describe("The OpenTelemetry access logger", func() {
	It("exports HTTP requests' records with body, attributes and resource, through its cluster", func() {
		receiver, otlpPort := startLogsReceiver()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Top:      "{node: {id: outrigger-e2e, cluster: e2e-cluster, locality: {zone: zone-a}}}",
			HCM:      `{stat_prefix: otel, access_log: [` + otelLog(otelLogFields) + `]}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 202, body: {inline_string: logged}}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: otlpPort, Extra: h2cOptions()}},
		}.YAML())
		for i := range 3 {
			Expect(get(port, fmt.Sprintf("/req/%d", i), http.Header{"X-Tenant": {"acme"}})).To(Equal(202))
		}
		Eventually(receiver.bodies).Should(ConsistOf("GET /req/0 202", "GET /req/1 202", "GET /req/2 202"))

		rl := receiver.exports()[0].GetResourceLogs()[0]
		res := rl.GetResource().GetAttributes()
		Expect(attribute(res, "log_name").GetStringValue()).To(Equal("edge"))
		Expect(attribute(res, "node_name").GetStringValue()).To(Equal("outrigger-e2e"))
		Expect(attribute(res, "cluster_name").GetStringValue()).To(Equal("e2e-cluster"))
		Expect(attribute(res, "zone_name").GetStringValue()).To(Equal("zone-a"))
		Expect(attribute(res, "region").GetStringValue()).To(Equal("eu-1"))
		rec := receiver.records()[0]
		Expect(rec.GetTimeUnixNano()).NotTo(BeZero())
		Expect(attribute(rec.GetAttributes(), "tenant").GetStringValue()).To(Equal("acme"))
		proto := attribute(rec.GetAttributes(), "http").GetKvlistValue().GetValues()
		Expect(proto).To(HaveLen(1))
		Expect(proto[0].GetValue().GetStringValue()).To(Equal("HTTP/1.1"))
		sizes := attribute(rec.GetAttributes(), "sizes").GetArrayValue().GetValues()
		Expect(sizes).To(HaveLen(2))
		Expect(sizes[1].GetStringValue()).To(Equal("6")) // "logged"
		// Without tracing a record has no trace ids.
		Expect(rec.GetTraceId()).To(BeEmpty())

		Expect(statValue(s, "cluster.otlp.upstream_cx_total")).To(Equal("1"))
		Eventually(func() string { return statValue(s, "access_logs.open_telemetry_access_log.logs_written") }).Should(Equal("3"))
		Expect(statValue(s, "access_logs.open_telemetry_access_log.logs_dropped")).To(Equal("0"))

		// What is buffered at shutdown is exported before the process
		// exits.
		Expect(get(port, "/at-exit", nil)).To(Equal(202))
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Expect(receiver.bodies()).To(ContainElement("GET /at-exit 202"))
	})

	It("records the request's span ids when tracing is on", func() {
		receiver, otlpPort := startLogsReceiver()
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM: `{stat_prefix: otel, access_log: [` + otelLog(`{grpc_service: {envoy_grpc: {cluster_name: otlp}}, buffer_flush_interval: 0.1s,
					body: {string_value: "%REQ(:PATH)%"}}`) + `],
				tracing: {provider: {name: envoy.tracers.opentelemetry, typed_config: ` +
				withType("type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig", "{service_name: edge}") + `}}}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: otlpPort, Extra: h2cOptions()}},
		}.YAML())
		const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		Expect(get(port, "/traced", http.Header{"Traceparent": {"00-" + trace + "-" + parent + "-01"}})).To(Equal(200))
		Expect(get(port, "/root", nil)).To(Equal(200))
		Eventually(receiver.bodies).Should(ConsistOf("/traced", "/root"))
		for _, rec := range receiver.records() {
			Expect(rec.GetTraceId()).To(HaveLen(16))
			Expect(rec.GetSpanId()).To(HaveLen(8))
			if rec.GetBody().GetStringValue() == "/traced" {
				// The request's span is a child of the caller's, in its
				// trace.
				Expect(hex.EncodeToString(rec.GetTraceId())).To(Equal(trace))
				Expect(hex.EncodeToString(rec.GetSpanId())).NotTo(Equal(parent))
			}
		}
	})

	It("exports tcp_proxy connections' records", func() {
		receiver, otlpPort := startLogsReceiver()
		up := startTCPServer(echo)
		port := freePort()
		// The OTLP cluster speaks h2c, and the logger goes first in the
		// tcp_proxy's access_log list.
		otlp := strings.TrimSuffix(tcpCluster("otlp", otlpPort), "}") + ", " + strings.TrimPrefix(h2cOptions(), "{")
		cfg := strings.Replace(tcpBootstrap(port, "cluster: echo", tcpCluster("echo", up), otlp),
			"          access_log:\n", "          access_log:\n          - "+otelLog(`{grpc_service: {envoy_grpc: {cluster_name: otlp}}, buffer_flush_interval: 0.1s,
				body: {string_value: "%UPSTREAM_CLUSTER% %BYTES_RECEIVED% %BYTES_SENT%"}}`)+"\n", 1)
		Expect(cfg).To(ContainSubstring("open_telemetry"))
		Start(newDir(), cfg)
		pingEcho(port)
		Eventually(receiver.bodies).Should(ConsistOf("echo 4 4"))
	})

	It("keeps serving while the receiver is down, dropping and counting the records", func() {
		port, otlpPort := freePort(), freePort() // nothing listens on otlpPort
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{stat_prefix: otel, access_log: [` + otelLog(`{grpc_service: {envoy_grpc: {cluster_name: otlp}, timeout: 1s},
				buffer_flush_interval: 0.05s, buffer_size_bytes: 64, body: {string_value: "%REQ(:PATH)%"}}`) + `]}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 202}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: otlpPort, Extra: h2cOptions()}},
		}.YAML())
		for i := range 20 {
			Expect(get(port, fmt.Sprintf("/down/%d", i), nil)).To(Equal(202))
		}
		Eventually(func() string { return statValue(s, "access_logs.open_telemetry_access_log.logs_dropped") }).Should(Equal("20"))
		Expect(statValue(s, "access_logs.open_telemetry_access_log.logs_written")).To(Equal("0"))
		Eventually(s.Stderr).Should(ContainSubstring("cannot export access logs"))
		Expect(get(port, "/still-serving", nil)).To(Equal(202))
		Expect(statValue(s, "cluster.otlp.upstream_cx_connect_fail")).NotTo(Equal("0"))
		// The sender is not stuck: shutdown ends promptly.
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
	})

	It("posts OTLP/HTTP protobuf requests to an http_service through its cluster", func() {
		endpoint, collectorPort := startOTLPHTTP(func() *collogspb.ExportLogsServiceRequest { return &collogspb.ExportLogsServiceRequest{} }, nil)
		got := endpoint.got
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{stat_prefix: otel, access_log: [` + otelLog(`{http_service: {http_uri: {uri: "http://collector/v1/logs", cluster: otlp, timeout: 1s}},
				buffer_flush_interval: 0.1s, body: {string_value: "%REQ(:PATH)%"}}`) + `]}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 202}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: collectorPort}},
		}.YAML())
		Expect(get(port, "/over-http", nil)).To(Equal(202))
		Eventually(got).ShouldNot(BeEmpty())
		p := got()[0]
		Expect(p.path).To(Equal("/v1/logs"))
		Expect(p.contentType).To(Equal("application/x-protobuf"))
		recs := p.req.GetResourceLogs()[0].GetScopeLogs()[0].GetLogRecords()
		Expect(recs).To(HaveLen(1))
		Expect(recs[0].GetBody().GetStringValue()).To(Equal("/over-http"))
		Eventually(func() string { return statValue(s, "access_logs.open_telemetry_access_log.logs_written") }).Should(Equal("1"))
	})

	It("exports when the buffer holds buffer_size_bytes, and what is buffered at shutdown", func() {
		receiver, otlpPort := startLogsReceiver()
		port := freePort()
		// Neither logger's flush timer fires during the spec: "small"
		// exports as each record fills its buffer, "big" keeps them.
		logger := func(name string, size int) string {
			return otelLog(fmt.Sprintf(`{grpc_service: {envoy_grpc: {cluster_name: otlp}}, log_name: %s,
				buffer_flush_interval: 3600s, buffer_size_bytes: %d, body: {string_value: "%%REQ(:PATH)%%"}}`, name, size))
		}
		s := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      `{stat_prefix: otel, access_log: [` + logger("small", 1) + `, ` + logger("big", 1<<20) + `]}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 202}}]",
			Clusters: []proxyCluster{{Name: "otlp", Port: otlpPort, Extra: h2cOptions()}},
		}.YAML())
		for i := range 3 {
			Expect(get(port, fmt.Sprintf("/b/%d", i), nil)).To(Equal(202))
		}
		Eventually(func() []string { return receiver.bodiesOf("small") }).Should(ConsistOf("/b/0", "/b/1", "/b/2"))
		Expect(receiver.bodiesOf("big")).To(BeEmpty())
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Expect(receiver.bodiesOf("big")).To(ConsistOf("/b/0", "/b/1", "/b/2"))
	})
})
