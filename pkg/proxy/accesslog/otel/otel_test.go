package otel

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	otelv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/open_telemetry/v3"
	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	otelresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/formatter/reqwithoutquery"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/resourcedetectors/staticconfig"
)

// receiver is an OTLP logs receiver that records every export request;
// it can hold exports, or reject records as a partial success.
type receiver struct {
	collogspb.UnimplementedLogsServiceServer
	mu       sync.Mutex
	requests []*collogspb.ExportLogsServiceRequest
	got      chan struct{}
	hold     chan struct{} // when set, Export waits on it
	reject   int64         // records each export rejects
}

func (r *receiver) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	r.got <- struct{}{}
	resp := &collogspb.ExportLogsServiceResponse{}
	if r.reject > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: r.reject}
	}
	return resp, nil
}

func (r *receiver) snapshot() []*collogspb.ExportLogsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*collogspb.ExportLogsServiceRequest(nil), r.requests...)
}

// serve starts r on a loopback port and returns its address.
func serve(t *testing.T, r *receiver) string {
	t.Helper()
	return grpcservicetest.Serve(t, func(srv *grpc.Server) { collogspb.RegisterLogsServiceServer(srv, r) })
}

// dialer is a cluster of one host.
type dialer = grpcservicetest.Dialer

// sinkContext reaches cluster "otel" at addr.
func sinkContext(addr string, st *stats.Store) accesslog.SinkContext {
	return accesslog.SinkContext{
		Cluster: func(name string) grpcservice.Cluster {
			if name == "otel" {
				return dialer(addr)
			}
			return nil
		},
		Node:  &corev3.Node{Id: "node-1", Cluster: "svc", Locality: &corev3.Locality{Zone: "z1"}},
		Stats: st,
		OpenGRPC: func(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
			return grpcservice.Open(gs, grpcservice.Context{Cluster: func(name string) grpcservice.Cluster {
				if name == "otel" {
					return dialer(addr)
				}
				return nil
			}})
		},
	}
}

// config reads an OpenTelemetryAccessLogConfig written as JSON.
func config(t *testing.T, js string) *otelv3.OpenTelemetryAccessLogConfig {
	t.Helper()
	var cfg otelv3.OpenTelemetryAccessLogConfig
	if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// newSink compiles a configuration written as JSON.
func newSink(t *testing.T, js, addr string, st *stats.Store) *sink {
	t.Helper()
	s, err := Factory{}.Compile(config(t, js), sinkContext(addr, st))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.(*sink).Close() })
	return s.(*sink)
}

type headers map[string]string

func (h headers) Get(n string) (string, bool) { v, ok := h[n]; return v, ok }

func entry(path string) *accesslog.Entry {
	return &accesslog.Entry{
		StartTime: time.Date(2026, 11, 25, 10, 0, 0, 500, time.UTC), Method: "GET", Path: path, Protocol: "HTTP/1.1",
		RequestHeaders: headers{"user-agent": "ua/1", "x-tenant": "t1"},
		ResponseCode:   200, BytesSent: 7,
	}
}

// counts are the logger's logs_written and logs_dropped.
func counts(st *stats.Store) (written, dropped uint64) {
	return st.Counter("access_logs.open_telemetry_access_log.logs_written").Value(),
		st.Counter("access_logs.open_telemetry_access_log.logs_dropped").Value()
}

// closeAndCount closes s, which waits for its last export, and returns
// its counts.
func closeAndCount(t *testing.T, s *sink, st *stats.Store) (written, dropped uint64) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return counts(st)
}

// logN logs n entries.
func logN(t *testing.T, s *sink, n int) {
	t.Helper()
	for range n {
		if _, err := s.Log(nil, entry("/x")); err != nil {
			t.Fatal(err)
		}
	}
}

// wait waits for n export requests.
func wait(t *testing.T, r *receiver, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.got:
		case <-time.After(10 * time.Second):
			t.Fatal("the receiver got no export")
		}
	}
}

// anyJSON reads an AnyValue written as JSON.
func anyJSON(t *testing.T, js string) *commonpb.AnyValue {
	t.Helper()
	var v commonpb.AnyValue
	if err := protojson.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestRecordAndResource(t *testing.T) {
	r := &receiver{got: make(chan struct{}, 16)}
	addr := serve(t, r)
	st := stats.NewStore()
	s := newSink(t, `{"common_config": {"log_name": "edge", "grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "transport_api_version": "V3"},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 1,
		"body": {"stringValue": "%REQ(:METHOD)% %PROTOCOL% %RESPONSE_CODE%"},
		"attributes": {"values": [
			{"key": "ua", "value": {"stringValue": "%REQ(USER-AGENT)%"}},
			{"key": "missing", "value": {"stringValue": "%REQ(X-NONE)%/%REQ(X-NONE)%"}},
			{"key": "nested", "value": {"kvlistValue": {"values": [{"key": "path", "value": {"stringValue": "%REQ(:PATH)%"}}]}}},
			{"key": "list", "value": {"arrayValue": {"values": [{"stringValue": "lit"}, {"stringValue": "%BYTES_SENT%"}]}}}]},
		"resource_attributes": {"values": [{"key": "region", "value": {"stringValue": "r1"}}, {"key": "zone_name", "value": {"intValue": "7"}}]},
		"custom_tags": [{"tag": "tenant", "request_header": {"name": "X-Tenant"}}]}`, addr, st)
	e := entry("/a")
	e.TraceID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	e.SpanID = [8]byte{8, 7, 6, 5, 4, 3, 2, 1}
	// A buffer of 1 byte exports every record as it comes.
	if _, err := s.Log(nil, e); err != nil {
		t.Fatal(err)
	}
	wait(t, r, 1)
	req := r.snapshot()[0]
	if len(req.GetResourceLogs()) != 1 || len(req.GetResourceLogs()[0].GetScopeLogs()) != 1 {
		t.Fatalf("request = %v, want one ResourceLogs with one ScopeLogs", req)
	}
	rl := req.GetResourceLogs()[0]
	// The built-in labels first; a resource attribute of the same key
	// replaces one in place.
	wantRes := map[string]string{"log_name": `{"stringValue":"edge"}`, "zone_name": `{"intValue":"7"}`,
		"cluster_name": `{"stringValue":"svc"}`, "node_name": `{"stringValue":"node-1"}`, "region": `{"stringValue":"r1"}`}
	var keys []string
	for _, kv := range rl.GetResource().GetAttributes() {
		keys = append(keys, kv.GetKey())
		if !proto.Equal(kv.GetValue(), anyJSON(t, wantRes[kv.GetKey()])) {
			t.Errorf("resource attribute %s = %v", kv.GetKey(), kv.GetValue())
		}
	}
	if got := strings.Join(keys, ","); got != "log_name,zone_name,cluster_name,node_name,region" {
		t.Errorf("resource attribute keys = %s", got)
	}
	recs := rl.GetScopeLogs()[0].GetLogRecords()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	rec := recs[0]
	if rec.GetTimeUnixNano() != uint64(e.StartTime.UnixNano()) {
		t.Errorf("time_unix_nano = %d, want the start time", rec.GetTimeUnixNano())
	}
	if rec.GetBody().GetStringValue() != "GET HTTP/1.1 200" {
		t.Errorf("body = %v", rec.GetBody())
	}
	if string(rec.GetTraceId()) != string(e.TraceID[:]) || string(rec.GetSpanId()) != string(e.SpanID[:]) {
		t.Errorf("trace_id, span_id = %x, %x", rec.GetTraceId(), rec.GetSpanId())
	}
	want := map[string]string{
		"ua":      `{"stringValue":"ua/1"}`,
		"missing": `{"stringValue":"-/-"}`,
		"nested":  `{"kvlistValue":{"values":[{"key":"path","value":{"stringValue":"/a"}}]}}`,
		"list":    `{"arrayValue":{"values":[{"stringValue":"lit"},{"stringValue":"7"}]}}`,
		"tenant":  `{"stringValue":"t1"}`,
	}
	if len(rec.GetAttributes()) != len(want) {
		t.Errorf("attributes = %v", rec.GetAttributes())
	}
	for _, kv := range rec.GetAttributes() {
		if !proto.Equal(kv.GetValue(), anyJSON(t, want[kv.GetKey()])) {
			t.Errorf("attribute %s = %v, want %s", kv.GetKey(), kv.GetValue(), want[kv.GetKey()])
		}
	}
	// Close waits for the export's answer.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := st.Counter("access_logs.open_telemetry_access_log.logs_written").Value(); n != 1 {
		t.Errorf("logs_written = %d, want 1", n)
	}
}

func TestNoTraceNoBodyNoLabels(t *testing.T) {
	r := &receiver{got: make(chan struct{}, 16)}
	addr := serve(t, r)
	s := newSink(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "disable_builtin_labels": true,
		"buffer_flush_interval": "0.05s", "body": {"kvlistValue": {"values": [{"key": "m", "value": {"stringValue": "%REQ(:METHOD)%"}}]}}}`, addr, stats.NewStore())
	logN(t, s, 3)
	// The flush interval exports the three records in one request.
	wait(t, r, 1)
	rl := r.snapshot()[0].GetResourceLogs()[0]
	if len(rl.GetResource().GetAttributes()) != 0 {
		t.Errorf("resource attributes = %v, want none", rl.GetResource().GetAttributes())
	}
	recs := rl.GetScopeLogs()[0].GetLogRecords()
	if len(recs) != 3 {
		t.Fatalf("%d records in one export, want 3", len(recs))
	}
	if recs[0].GetTraceId() != nil || recs[0].GetSpanId() != nil || len(recs[0].GetAttributes()) != 0 {
		t.Errorf("record = %v, want no trace ids and no attributes", recs[0])
	}
	if !proto.Equal(recs[0].GetBody(), anyJSON(t, `{"kvlistValue":{"values":[{"key":"m","value":{"stringValue":"GET"}}]}}`)) {
		t.Errorf("body = %v", recs[0].GetBody())
	}
}

func TestCloseExportsTheBuffer(t *testing.T) {
	r := &receiver{got: make(chan struct{}, 16)}
	addr := serve(t, r)
	st := stats.NewStore()
	s := newSink(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "buffer_flush_interval": "3600s", "stat_prefix": "edge"}`, addr, st)
	logN(t, s, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wait(t, r, 1)
	if n := len(r.snapshot()[0].GetResourceLogs()[0].GetScopeLogs()[0].GetLogRecords()); n != 2 {
		t.Errorf("the last export has %d records, want 2", n)
	}
	if n := st.Counter("access_logs.open_telemetry_access_log.edge.logs_written").Value(); n != 2 {
		t.Errorf("edge.logs_written = %d, want 2", n)
	}
	// Records logged after Close are dropped.
	if _, err := s.Log(nil, entry("/late")); err != nil {
		t.Fatal(err)
	}
	if n := st.Counter("access_logs.open_telemetry_access_log.edge.logs_dropped").Value(); n != 1 {
		t.Errorf("edge.logs_dropped = %d, want 1", n)
	}
}

func TestPartialSuccessCountsRejectedDropped(t *testing.T) {
	r := &receiver{got: make(chan struct{}, 16), reject: 1}
	addr := serve(t, r)
	st := stats.NewStore()
	s := newSink(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "buffer_flush_interval": "3600s"}`, addr, st)
	logN(t, s, 3)
	written, dropped := closeAndCount(t, s, st)
	if written != 2 || dropped != 1 {
		t.Errorf("logs_written, logs_dropped = %d, %d, want 2, 1", written, dropped)
	}
}

func TestReceiverDownDropsAndCounts(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	st := stats.NewStore()
	s := newSink(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "buffer_flush_interval": "3600s", "buffer_size_bytes": 1}`, addr, st)
	logN(t, s, 20)
	written, dropped := closeAndCount(t, s, st)
	if written != 0 || dropped != 20 {
		t.Errorf("logs_written, logs_dropped = %d, %d, want 0, 20", written, dropped)
	}
}

func TestHeldExportBoundsTheBuffer(t *testing.T) {
	r := &receiver{got: make(chan struct{}, 64), hold: make(chan struct{})}
	addr := serve(t, r)
	st := stats.NewStore()
	s := newSink(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "buffer_flush_interval": "3600s", "buffer_size_bytes": 1}`, addr, st)
	one := proto.Size(mustRecord(s, entry("/x")))
	if s.maxPending != minPendingBytes {
		t.Errorf("the buffer's bound is %d bytes, want %d", s.maxPending, minPendingBytes)
	}
	// The first record fills the buffer and wakes the sender, whose
	// export the receiver holds; more fill the buffer to its bound, and
	// the rest are dropped without Log waiting.
	n := 2 * minPendingBytes / one
	logN(t, s, n)
	s.mu.Lock()
	buffered := s.size
	s.mu.Unlock()
	if buffered > minPendingBytes+one {
		t.Errorf("the buffer holds %d bytes, want at most %d", buffered, minPendingBytes+one)
	}
	dropped := st.Counter("access_logs.open_telemetry_access_log.logs_dropped").Value()
	if dropped == 0 {
		t.Error("no record was dropped while the export was held")
	}
	close(r.hold)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	written := st.Counter("access_logs.open_telemetry_access_log.logs_written").Value()
	dropped = st.Counter("access_logs.open_telemetry_access_log.logs_dropped").Value()
	if written+dropped != uint64(n) || written == 0 {
		t.Errorf("logs_written %d + logs_dropped %d, want %d in all and some written", written, dropped, n)
	}
}

// mustRecord is e's record.
func mustRecord(s *sink, e *accesslog.Entry) proto.Message {
	r, _ := s.record(nil, e)
	return r
}

func TestCompileErrors(t *testing.T) {
	const svc = `"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}`
	for _, tc := range []struct{ name, js, want string }{
		{"no service", `{}`, "grpc_service: one of grpc_service, common_config.grpc_service or http_service is required"},
		{"http and grpc", `{` + svc + `, "http_service": {"http_uri": {"uri": "http://x/v1/logs", "cluster": "otel", "timeout": "1s"}}}`, "http_service: only one of grpc_service and http_service may be set"},
		{"http cluster", `{"http_service": {"http_uri": {"uri": "http://x/v1/logs", "cluster": "nope", "timeout": "1s"}}}`, "http_service.http_uri.cluster: unknown cluster 'nope'"},
		{"http header format", `{"http_service": {"http_uri": {"uri": "http://x/v1/logs", "cluster": "otel", "timeout": "1s"},
			"request_headers_to_add": [{"header": {"key": "authorization", "value": "%ENVIRONMENT(TOKEN)%"}}]}}`,
			"http_service.request_headers_to_add[0].header.value: format operators are not supported"},
		{"http uri", `{"http_service": {"http_uri": {"uri": "/v1/logs", "cluster": "otel", "timeout": "1s"}}}`, "http_service.http_uri.uri: "},
		{"v2", `{"common_config": {` + svc + `, "transport_api_version": "V2"}}`, "common_config.transport_api_version: V2"},
		{"interval", `{` + svc + `, "buffer_flush_interval": "0s"}`, "buffer_flush_interval: must be positive"},
		{"common interval", `{"common_config": {` + svc + `, "buffer_flush_interval": "0s"}}`, "common_config.buffer_flush_interval: must be positive"},
		{"body int", `{` + svc + `, "body": {"intValue": "3"}}`, "body.int_value: only string values"},
		{"nested bool", `{` + svc + `, "attributes": {"values": [{"key": "a", "value": {"kvlistValue": {"values": [{"key": "b", "value": {"boolValue": true}}]}}}]}}`,
			"attributes.values[0].value.kvlist_value.values[0].value.bool_value: only string values"},
		{"array double", `{` + svc + `, "attributes": {"values": [{"key": "a", "value": {"arrayValue": {"values": [{"doubleValue": 1}]}}}]}}`,
			"attributes.values[0].value.array_value.values[0].double_value: only string values"},
		{"unset value", `{` + svc + `, "attributes": {"values": [{"key": "a"}]}}`, "attributes.values[0].value.value: must be set"},
		{"bad format", `{` + svc + `, "body": {"stringValue": "%NOPE%"}}`, "body.string_value: "},
		{"tag", `{` + svc + `, "custom_tags": [{"tag": "", "literal": {"value": "v"}}]}`, "custom_tags[0].tag: must be set"},
		{"common tags", `{"common_config": {` + svc + `, "custom_tags": [{"tag": "t", "literal": {"value": "v"}}]}}`, "common_config.custom_tags: not read"},
		{"common filter state", `{"common_config": {` + svc + `, "filter_state_objects_to_log": ["k"]}}`, "common_config.filter_state_objects_to_log: not read"},
		{"formatter", `{` + svc + `, "formatters": [{"name": "x", "typed_config": {"@type": "type.googleapis.com/google.protobuf.Empty"}}]}`, "formatters[0]"},
		{"unknown cluster", `{"grpc_service": {"envoy_grpc": {"cluster_name": "nope"}}}`, "grpc_service."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Factory{}.Compile(config(t, tc.js), sinkContext("127.0.0.1:1", stats.NewStore()))
			if err == nil {
				_ = s.(*sink).Close()
				t.Fatalf("compiled; want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestHTTPServicePostsProtobuf(t *testing.T) {
	type post struct {
		path, contentType, header string
		req                       *collogspb.ExportLogsServiceRequest
	}
	posts := make(chan post, 4)
	var status atomic.Int32
	status.Store(http.StatusOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("the body is not an ExportLogsServiceRequest: %v", err)
		}
		posts <- post{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Key"), &req}
		w.WriteHeader(int(status.Load()))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	st := stats.NewStore()
	s := newSink(t, `{"http_service": {"http_uri": {"uri": "http://collector/v1/logs", "cluster": "otel", "timeout": "5s"},
		"request_headers_to_add": [{"header": {"key": "x-key", "value": "k1"}}]},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 1, "body": {"stringValue": "%REQ(:PATH)%"}}`, ln.Addr().String(), st)
	if _, err := s.Log(nil, entry("/a")); err != nil {
		t.Fatal(err)
	}
	var p post
	select {
	case p = <-posts:
	case <-time.After(10 * time.Second):
		t.Fatal("the collector got no POST")
	}
	if p.path != "/v1/logs" || p.contentType != "application/x-protobuf" || p.header != "k1" {
		t.Errorf("POST %s, Content-Type %q, x-key %q", p.path, p.contentType, p.header)
	}
	recs := p.req.GetResourceLogs()[0].GetScopeLogs()[0].GetLogRecords()
	if len(recs) != 1 || recs[0].GetBody().GetStringValue() != "/a" {
		t.Errorf("records = %v", recs)
	}
	// A failed export drops its records.
	status.Store(http.StatusServiceUnavailable)
	if _, err := s.Log(nil, entry("/b")); err != nil {
		t.Fatal(err)
	}
	<-posts
	written, dropped := closeAndCount(t, s, st)
	if written != 1 || dropped != 1 {
		t.Errorf("logs_written, logs_dropped = %d, %d, want 1, 1", written, dropped)
	}
}

func TestResourceDetectors(t *testing.T) {
	reg, err := extension.New(extension.Of(staticconfig.Name, opentelemetry.ResourceDetectorCategory,
		&otelresv3.StaticConfigResourceDetectorConfig{}, staticconfig.Detector{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := sinkContext("127.0.0.1:1", stats.NewStore())
	ctx.Extensions = reg
	// Detected attributes replace built-in labels; resource_attributes
	// replace detected ones.
	s, _, err := compile(config(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "log_name": "edge",
		"resource_detectors": [{"name": "envoy.tracers.opentelemetry.resource_detectors.static_config", "typed_config": {
			"@type": "type.googleapis.com/envoy.extensions.tracers.opentelemetry.resource_detectors.v3.StaticConfigResourceDetectorConfig",
			"attributes": {"node_name": "detected", "team": "t1", "region": "detected"}}}],
		"resource_attributes": {"values": [{"key": "region", "value": {"stringValue": "eu-1"}}]}}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range s.resource {
		got[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	want := map[string]string{"log_name": "edge", "zone_name": "z1", "cluster_name": "svc", "node_name": "detected", "team": "t1", "region": "eu-1"}
	if len(got) != len(want) {
		t.Errorf("resource = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("resource attribute %s = %q, want %q", k, got[k], v)
		}
	}
	// A detector the registry lacks is refused with its path.
	ctx.Extensions, _ = extension.New()
	if _, _, err := compile(config(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}},
		"resource_detectors": [{"name": "envoy.tracers.opentelemetry.resource_detectors.static_config", "typed_config": {
			"@type": "type.googleapis.com/envoy.extensions.tracers.opentelemetry.resource_detectors.v3.StaticConfigResourceDetectorConfig"}}]}`), ctx); err == nil || !strings.HasPrefix(err.Error(), "resource_detectors[0].") {
		t.Errorf("error = %v, want one about resource_detectors[0]", err)
	}
}

func TestTopLevelFieldsWinOverCommonConfig(t *testing.T) {
	s, svc, err := compile(config(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}}, "log_name": "new",
		"common_config": {"log_name": "old", "grpc_service": {"envoy_grpc": {"cluster_name": "nope"}}, "buffer_size_bytes": 5, "buffer_flush_interval": "2s"},
		"buffer_flush_interval": "3s"}`), sinkContext("127.0.0.1:1", stats.NewStore()))
	if err != nil {
		t.Fatal(err)
	}
	if svc.path != "grpc_service" || svc.grpc.GetEnvoyGrpc().GetClusterName() != "otel" {
		t.Errorf("service = %s %v, want the top-level grpc_service", svc.path, svc.grpc)
	}
	if s.logName != "new" || s.maxBytes != 5 || s.flushEvery != 3*time.Second {
		t.Errorf("log_name %q, buffer_size_bytes %d, buffer_flush_interval %v; want new, 5 (common_config's), 3s", s.logName, s.maxBytes, s.flushEvery)
	}
	// An http_service wins over common_config's gRPC service.
	_, svc, err = compile(config(t, `{"http_service": {"http_uri": {"uri": "http://c/v1/logs", "cluster": "otel", "timeout": "1s"}},
		"common_config": {"log_name": "old", "grpc_service": {"envoy_grpc": {"cluster_name": "nope"}}}}`), sinkContext("127.0.0.1:1", stats.NewStore()))
	if err != nil || svc.http == nil {
		t.Errorf("compile: %v, service %s; want the http_service", err, svc.path)
	}
}

// stateObject is a filter state object whose TYPED form is a string.
type stateObject string

func (o stateObject) FilterStateString() (string, bool) { return string(o), true }
func (o stateObject) FilterStateProto() proto.Message   { return wrapperspb.String(string(o)) }

func TestFilterStateFormattersAndTags(t *testing.T) {
	reg, err := extension.New(extension.Of(reqwithoutquery.Name, accesslog.FormatterCategory, &rwqv3.ReqWithoutQuery{}, reqwithoutquery.Factory{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := sinkContext("127.0.0.1:1", stats.NewStore())
	ctx.Extensions = reg
	s, _, err := compile(config(t, `{"grpc_service": {"envoy_grpc": {"cluster_name": "otel"}},
		"formatters": [{"name": "envoy.formatter.req_without_query", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery"}}],
		"body": {"stringValue": "%REQ_WITHOUT_QUERY(:PATH)%"},
		"filter_state_objects_to_log": ["absent", "state"],
		"custom_tags": [{"tag": "lit", "literal": {"value": "v"}}, {"tag": "missing", "request_header": {"name": "x-none"}},
			{"tag": "dflt", "request_header": {"name": "x-none", "default_value": "d"}}]}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := entry("/p?q=1")
	e.SetFilterState("state", stateObject("s1"))
	r, _ := s.record(nil, e)
	if r.GetBody().GetStringValue() != "/p" {
		t.Errorf("body = %v, want the path without its query", r.GetBody())
	}
	var got []string
	for _, kv := range r.GetAttributes() {
		got = append(got, kv.GetKey()+"="+kv.GetValue().GetStringValue())
	}
	// The filter state objects present, in their JSON form, then the
	// tags that have a value.
	if want := `state="s1",lit=v,dflt=d`; strings.Join(got, ",") != want {
		t.Errorf("attributes = %s, want %s", strings.Join(got, ","), want)
	}
}
