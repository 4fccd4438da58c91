package als

import (
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	grpcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	alsv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// collector is an access log service that records every message, and
// can end streams or stop reading on request.
type collector struct {
	alsv3.UnimplementedAccessLogServiceServer
	mu       sync.Mutex
	streams  [][]*alsv3.StreamAccessLogsMessage
	got      chan struct{}
	endAfter int           // end each stream after this many messages; 0 never
	hold     chan struct{} // when set, receiving waits on it
}

func (c *collector) StreamAccessLogs(st alsv3.AccessLogService_StreamAccessLogsServer) error {
	c.mu.Lock()
	c.streams = append(c.streams, nil)
	idx := len(c.streams) - 1
	c.mu.Unlock()
	for n := 1; ; n++ {
		if c.hold != nil {
			<-c.hold
		}
		msg, err := st.Recv()
		if err != nil {
			return nil
		}
		c.mu.Lock()
		c.streams[idx] = append(c.streams[idx], msg)
		c.mu.Unlock()
		c.got <- struct{}{}
		if c.endAfter > 0 && n >= c.endAfter {
			return st.SendAndClose(&alsv3.StreamAccessLogsResponse{})
		}
	}
}

func (c *collector) snapshot() [][]*alsv3.StreamAccessLogsMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]*alsv3.StreamAccessLogsMessage, len(c.streams))
	for i, s := range c.streams {
		out[i] = append([]*alsv3.StreamAccessLogsMessage(nil), s...)
	}
	return out
}

// serve starts c on a loopback port and returns its address.
func serve(t *testing.T, c *collector) string {
	t.Helper()
	return grpcservicetest.Serve(t, func(srv *grpc.Server) { alsv3.RegisterAccessLogServiceServer(srv, c) })
}

// dialer is a cluster of one host.
type dialer = grpcservicetest.Dialer

// newSink compiles an http_grpc (or tcp_grpc) configuration written as
// JSON, its grpc_service naming cluster "als" at addr.
func newSink(t *testing.T, js, addr string, tcp bool, st *stats.Store) *sink {
	t.Helper()
	ctx := accesslog.SinkContext{
		Node:  &corev3.Node{Id: "node-1", Cluster: "svc"},
		Stats: st,
		OpenGRPC: func(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
			return grpcservice.Open(gs, grpcservice.Context{Cluster: func(name string) grpcservice.Cluster {
				if name == "als" {
					return dialer(addr)
				}
				return nil
			}})
		},
	}
	var (
		s   accesslog.Sink
		err error
	)
	if tcp {
		var cfg grpcv3.TcpGrpcAccessLogConfig
		if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
			t.Fatal(err)
		}
		s, err = TCP{}.Compile(&cfg, ctx)
	} else {
		var cfg grpcv3.HttpGrpcAccessLogConfig
		if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
			t.Fatal(err)
		}
		s, err = HTTP{}.Compile(&cfg, ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.(*sink).Close() })
	return s.(*sink)
}

type headers map[string]string

func (h headers) Get(n string) (string, bool) { v, ok := h[n]; return v, ok }

func entry(path string, code int) *accesslog.Entry {
	start := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	return &accesslog.Entry{
		StartTime: start, Method: "POST", Path: path, Authority: "example.com", Scheme: "http", Protocol: "HTTP/1.1",
		RequestHeaders:  headers{"user-agent": "ua/1", "x-request-id": "rid", "x-tenant": "t1"},
		ResponseHeaders: headers{"content-type": "text/plain"},
		ResponseCode:    code, BytesReceived: 5, BytesSent: 7, Duration: 12 * time.Millisecond,
		DownstreamRemoteAddress: "10.0.0.1:5555", UpstreamHost: "127.0.0.1:8080", UpstreamCluster: "backend",
		ResponseFlags: accesslog.NoHealthyUpstream | accesslog.UnauthorizedExternalService,
		RouteName:     "r1", Type: datav3.AccessLogType_DownstreamEnd,
	}
}

// wait waits for n messages.
func wait(t *testing.T, c *collector, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.got:
		case <-time.After(10 * time.Second):
			t.Fatal("the collector got no message")
		}
	}
}

func TestHTTPLogsBatchedWithIdentifier(t *testing.T) {
	c := &collector{got: make(chan struct{}, 16)}
	addr := serve(t, c)
	st := stats.NewStore()
	s := newSink(t, `{"common_config": {"log_name": "edge", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 1,
		"custom_tags": [{"tag": "lit", "literal": {"value": "v"}}, {"tag": "tenant", "request_header": {"name": "X-Tenant"}}]},
		"additional_request_headers_to_log": ["X-Tenant"], "additional_response_headers_to_log": ["content-type", "missing"]}`, addr, false, st)
	// A buffer of 1 byte sends every entry as it comes.
	if _, err := s.Log(nil, entry("/a", 200)); err != nil {
		t.Fatal(err)
	}
	wait(t, c, 1)
	if _, err := s.Log(nil, entry("/b", 503)); err != nil {
		t.Fatal(err)
	}
	wait(t, c, 1)
	got := c.snapshot()
	if len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("got %d streams, want one with 2 messages", len(got))
	}
	first, second := got[0][0], got[0][1]
	if id := first.GetIdentifier(); id.GetLogName() != "edge" || id.GetNode().GetId() != "node-1" {
		t.Errorf("first message's identifier = %v", id)
	}
	if second.GetIdentifier() != nil {
		t.Error("the second message repeats the identifier")
	}
	e := first.GetHttpLogs().GetLogEntry()[0]
	want := &datav3.HTTPAccessLogEntry{}
	if err := protojson.Unmarshal([]byte(`{
		"commonProperties": {
			"downstreamRemoteAddress": {"socketAddress": {"address": "10.0.0.1", "portValue": 5555}},
			"startTime": "2026-11-25T10:00:00Z",
			"timeToLastDownstreamTxByte": "0.012s",
			"upstreamRemoteAddress": {"socketAddress": {"address": "127.0.0.1", "portValue": 8080}},
			"upstreamCluster": "backend",
			"responseFlags": {"noHealthyUpstream": true, "unauthorizedDetails": {"reason": "EXTERNAL_SERVICE"}},
			"routeName": "r1",
			"customTags": {"lit": "v", "tenant": "t1"},
			"duration": "0.012s",
			"accessLogType": "DownstreamEnd"
		},
		"protocolVersion": "HTTP11",
		"request": {"requestMethod": "POST", "scheme": "http", "authority": "example.com", "path": "/a",
			"userAgent": "ua/1", "requestId": "rid", "requestBodyBytes": "5", "requestHeaders": {"x-tenant": "t1"}},
		"response": {"responseCode": 200, "responseBodyBytes": "7", "responseHeaders": {"content-type": "text/plain"}}
	}`), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(e, want) {
		t.Errorf("entry:\n got %v\nwant %v", protojson.Format(e), protojson.Format(want))
	}
	if n := st.Counter("access_logs.grpc_access_log.logs_written").Value(); n != 2 {
		t.Errorf("logs_written = %d, want 2", n)
	}
}

func TestFlushIntervalAndClose(t *testing.T) {
	c := &collector{got: make(chan struct{}, 16)}
	addr := serve(t, c)
	s := newSink(t, `{"common_config": {"log_name": "tcp", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "0.05s"}}`, addr, true, stats.NewStore())
	for i := range 3 {
		if _, err := s.Log(nil, entry("/x", 200+i)); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, c, 1)
	got := c.snapshot()
	if n := len(got[0][0].GetTcpLogs().GetLogEntry()); n != 3 {
		t.Fatalf("one flush sent %d TCP entries, want 3", n)
	}
	tcp := got[0][0].GetTcpLogs().GetLogEntry()[0]
	if tcp.GetConnectionProperties().GetReceivedBytes() != 5 || tcp.GetConnectionProperties().GetSentBytes() != 7 {
		t.Errorf("connection properties = %v", tcp.GetConnectionProperties())
	}
	// What is buffered when the sink closes is delivered.
	if _, err := s.Log(nil, entry("/last", 200)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wait(t, c, 1)
}

func TestStreamEndedByTheServiceIsReopened(t *testing.T) {
	c := &collector{got: make(chan struct{}, 16), endAfter: 1}
	addr := serve(t, c)
	s := newSink(t, `{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 1}}`, addr, false, stats.NewStore())
	for i := range 3 {
		if _, err := s.Log(nil, entry("/x", 200)); err != nil {
			t.Fatal(err)
		}
		wait(t, c, 1)
		// Let the sink see the end of the stream before the next entry.
		deadline := time.Now().Add(5 * time.Second)
		for s.ended.Load() < int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("stream %d: the sink never saw the service end it", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	got := c.snapshot()
	if len(got) != 3 {
		t.Fatalf("%d streams, want 3 (one per message)", len(got))
	}
	for i, st := range got {
		if st[0].GetIdentifier().GetLogName() != "l" {
			t.Errorf("stream %d did not start with the identifier", i)
		}
	}
}

func TestDropsWhenTheServiceIsBehind(t *testing.T) {
	hold := make(chan struct{})
	c := &collector{got: make(chan struct{}, 1024), hold: hold}
	addr := serve(t, c)
	st := stats.NewStore()
	s := newSink(t, `{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 2000}}`, addr, false, st)
	// The service does not read: sends block once its window is full,
	// the buffer fills, and entries are dropped rather than wait. Big
	// entries fill the flow-control windows quickly.
	big := entry("/"+strings.Repeat("p", 4000), 200)
	deadline := time.Now().Add(20 * time.Second)
	for st.Counter("access_logs.grpc_access_log.logs_dropped").Value() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing was dropped")
		}
		if _, err := s.Log(nil, big); err != nil {
			t.Fatal(err)
		}
	}
	close(hold)
	written := st.Counter("access_logs.grpc_access_log.logs_written").Value()
	if written == 0 {
		t.Error("nothing was written")
	}
	// Close is bounded even though the service fell behind.
	start := time.Now()
	if err := s.Close(); err != nil && err != io.EOF {
		t.Logf("close: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestCompileErrors(t *testing.T) {
	ctx := accesslog.SinkContext{OpenGRPC: func(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
		return grpcservice.Open(gs, grpcservice.Context{Cluster: func(string) grpcservice.Cluster { return nil }})
	}}
	tests := map[string]string{
		`{}`:                                   "common_config: required",
		`{"common_config": {}}`:                "common_config.log_name: must be set",
		`{"common_config": {"log_name": "l"}}`: "common_config.grpc_service: required",
		`{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "nope"}}}}`:                                                      "common_config.grpc_service.envoy_grpc.cluster_name: unknown gRPC client cluster 'nope'",
		`{"common_config": {"log_name": "l", "transport_api_version": "V2", "grpc_service": {}}}`:                                                             "common_config.transport_api_version: V2 is not supported",
		`{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "x"}}, "filter_state_objects_to_log": ["a"]}}`:                   "filter_state_objects_to_log: not supported",
		`{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "x"}}, "custom_tags": [{"tag": "m", "metadata": {}}]}}`:          "common_config.custom_tags[0].metadata.kind: one of request, route, cluster or host is required",
		`{"common_config": {"log_name": "l", "grpc_service": {"google_grpc": {"target_uri": "127.0.0.1:1", "stat_prefix": "s", "channel_credentials": {}}}}}`: "google_grpc.channel_credentials: not supported",
	}
	for js, want := range tests {
		var cfg grpcv3.HttpGrpcAccessLogConfig
		if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
			t.Fatal(err)
		}
		_, err := HTTP{}.Compile(&cfg, ctx)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error = %v, want it to contain %q", js, err, want)
		}
	}
}

// TestEntriesOutliveTheirMemory logs entries whose strings share one buffer
// that is overwritten after each Log, as a codec reuses its read buffer for
// the next request: the batch must keep what each entry said.
func TestEntriesOutliveTheirMemory(t *testing.T) {
	c := &collector{got: make(chan struct{}, 16)}
	addr := serve(t, c)
	s := newSink(t, `{"common_config": {"log_name": "reuse", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "3600s"}}`, addr, false, stats.NewStore())
	buf := []byte("/req/0")
	for i := range 3 {
		buf[len(buf)-1] = byte('0' + i)
		e := entry(unsafe.String(&buf[0], len(buf)), 200)
		if _, err := s.Log(nil, e); err != nil {
			t.Fatal(err)
		}
	}
	buf[len(buf)-1] = 'X'
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wait(t, c, 1)
	var paths []string
	for _, m := range c.snapshot()[0] {
		for _, e := range m.GetHttpLogs().GetLogEntry() {
			paths = append(paths, e.GetRequest().GetPath())
		}
	}
	if want := []string{"/req/0", "/req/1", "/req/2"}; !slices.Equal(paths, want) {
		t.Fatalf("paths = %q, want %q", paths, want)
	}
}
