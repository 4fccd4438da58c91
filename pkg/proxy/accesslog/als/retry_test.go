package als

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	grpcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// flakyDialer refuses its first fail connections, then reaches addr.
type flakyDialer struct {
	addr  string
	fail  int32
	tries atomic.Int32
}

func (d *flakyDialer) Connect(ctx context.Context) (net.Conn, error) {
	if d.tries.Add(1) <= d.fail {
		return nil, errors.New("connection refused")
	}
	return dialer(d.addr).Connect(ctx)
}

// flakySink compiles an http_grpc configuration whose cluster "als" is d.
func flakySink(t *testing.T, js string, d *flakyDialer) *sink {
	t.Helper()
	ctx := accesslog.SinkContext{
		Node:  &corev3.Node{Id: "node-1"},
		Stats: stats.NewStore(),
		OpenGRPC: func(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
			return grpcservice.Open(gs, grpcservice.Context{Cluster: func(string) grpcservice.Cluster { return d }})
		},
	}
	var cfg grpcv3.HttpGrpcAccessLogConfig
	if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	s, err := HTTP{}.Compile(&cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.(*sink).Close() })
	return s.(*sink)
}

func TestStreamRetryPolicy(t *testing.T) {
	c := &collector{got: make(chan struct{}, 16)}
	d := &flakyDialer{addr: serve(t, c), fail: 1}
	s := flakySink(t, `{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 1, "grpc_stream_retry_policy": {"num_retries": 2}}}`, d)
	if _, err := s.Log(nil, entry("/x", 200)); err != nil {
		t.Fatal(err)
	}
	wait(t, c, 1)
	if n := d.tries.Load(); n != 2 {
		t.Errorf("%d connection attempts, want the refused one and its retry", n)
	}
}

func TestNoStreamRetryWithoutPolicy(t *testing.T) {
	c := &collector{got: make(chan struct{}, 16)}
	d := &flakyDialer{addr: serve(t, c), fail: 1}
	s := flakySink(t, `{"common_config": {"log_name": "l", "grpc_service": {"envoy_grpc": {"cluster_name": "als"}},
		"buffer_flush_interval": "3600s", "buffer_size_bytes": 1}}`, d)
	if _, err := s.Log(nil, entry("/x", 200)); err != nil {
		t.Fatal(err)
	}
	// The batch is lost with its stream; the sender flushes once.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := c.snapshot(); len(got) != 0 {
		t.Errorf("the service got %d streams: a failed stream is not retried without grpc_stream_retry_policy", len(got))
	}
	if n := d.tries.Load(); n != 1 {
		t.Errorf("%d connection attempts, want 1", n)
	}
}
