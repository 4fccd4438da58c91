package loadreport

import (
	"net"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// wait bounds every wait of these tests for something that must happen.
const wait = 10 * time.Second

// lrsServer is a Load Reporting Service on a loopback port: each stream
// hands its requests to the test, and sends what the test queues; a
// queued error ends the stream with it.
type lrsServer struct {
	lrsv3.UnimplementedLoadReportingServiceServer
	requests  chan *lrsv3.LoadStatsRequest
	responses chan any // *lrsv3.LoadStatsResponse or error
	streams   chan struct{}
}

// startLRS serves an lrsServer and returns it with a channel to it.
func startLRS(t *testing.T) (*lrsServer, *grpc.ClientConn) {
	t.Helper()
	s := &lrsServer{
		requests:  make(chan *lrsv3.LoadStatsRequest, 100),
		responses: make(chan any, 10),
		streams:   make(chan struct{}, 10),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	lrsv3.RegisterLoadReportingServiceServer(gs, s)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, conn
}

// StreamLoadStats implements the service.
func (s *lrsServer) StreamLoadStats(st lrsv3.LoadReportingService_StreamLoadStatsServer) error {
	s.streams <- struct{}{}
	errs := make(chan error, 1)
	go func() {
		for {
			req, err := st.Recv()
			if err != nil {
				errs <- err
				return
			}
			s.requests <- req
		}
	}()
	for {
		select {
		case err := <-errs:
			return err
		case r := <-s.responses:
			if r == nil {
				return nil // an OK status
			}
			if err, ok := r.(error); ok {
				return err
			}
			if err := st.Send(r.(*lrsv3.LoadStatsResponse)); err != nil {
				return err
			}
		}
	}
}

// next returns the next request the server received.
func (s *lrsServer) next(t *testing.T) *lrsv3.LoadStatsRequest {
	t.Helper()
	select {
	case req := <-s.requests:
		return req
	case <-time.After(wait):
		t.Fatal("no load report arrived")
		return nil
	}
}

// nextWith returns the next request that reports on cluster name.
func (s *lrsServer) nextWith(t *testing.T, name string) *lrsv3.LoadStatsRequest {
	t.Helper()
	for {
		req := s.next(t)
		for _, cs := range req.GetClusterStats() {
			if cs.GetClusterName() == name {
				return req
			}
		}
	}
}

// respond queues a response, or an error that ends the stream.
func (s *lrsServer) respond(r any) { s.responses <- r }

// abort is a stream failure a server might end a stream with.
var abort = status.Error(codes.Unavailable, "going away")

// testClusters builds clusters from YAML, each a Cluster message.
func testClusters(t *testing.T, local *upstream.Locality, docs ...string) *cluster.Manager {
	t.Helper()
	var cfgs []*clusterv3.Cluster
	for _, d := range docs {
		js, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		c := &clusterv3.Cluster{}
		if err := protojson.Unmarshal(js, c); err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	m, err := cluster.NewManager(cfgs, cluster.Options{Stats: stats.NewStore(), Locality: local})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// newTestReporter starts a reporter of the clusters m to conn.
func newTestReporter(t *testing.T, conn *grpc.ClientConn, m *cluster.Manager, flags map[string]bool) (*Reporter, *stats.Store) {
	t.Helper()
	store := stats.NewStore()
	o := Options{
		Conn:       conn,
		Node:       &corev3.Node{Id: "proxy-1", Cluster: "mesh", ClientFeatures: []string{"envoy.lb.does_not_support_overprovisioning"}},
		Clusters:   m,
		Stats:      store,
		RetryDelay: 20 * time.Millisecond,
	}
	if flags != nil {
		o.Flag = func(key string, def bool) bool {
			if v, ok := flags[key]; ok {
				return v
			}
			return def
		}
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, store
}

// hostOf returns the host of c at address.
func hostOf(t *testing.T, c *cluster.Cluster, address string) *upstream.Host {
	t.Helper()
	for _, h := range c.Hosts() {
		if h.Address == address {
			return h
		}
	}
	t.Fatalf("cluster %s has no host %s", c.Name(), address)
	return nil
}

// serve counts requests on h as the router does: issued, then each
// finished with success or error.
func serve(h *upstream.Host, success, failed int) {
	for range success {
		h.Stats.RqTotal.Add(1)
		h.Stats.RqSuccess.Add(1)
	}
	for range failed {
		h.Stats.RqTotal.Add(1)
		h.Stats.RqError.Add(1)
	}
}
