package grpcstats

import (
	"net/http"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	grpcstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// frame is a gRPC message of n payload bytes.
func frame(n int) []byte {
	return append([]byte{0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, make([]byte, n)...)
}

func TestFrameCounter(t *testing.T) {
	body := append(append(frame(3), frame(0)...), frame(300)...)
	for size := 1; size <= len(body); size++ {
		var c frameCounter
		var got uint64
		for p := body; len(p) > 0; p = p[min(size, len(p)):] {
			got += c.inspect(p[:min(size, len(p))])
		}
		if got != 3 {
			t.Fatalf("pieces of %d: %d messages, want 3", size, got)
		}
	}
}

// call runs one gRPC call to cluster "svc" through a filter compiled from
// cfg: two request messages, a 200 application/grpc response with one
// message, and trailers with status.
func call(t *testing.T, store *stats.Store, cfg *grpcstatsv3.FilterConfig, path, status string) {
	t.Helper()
	c, err := Factory{}.Compile(cfg, httpfilter.Context{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	f := c.NewFilter().(*filter)
	s := httpfiltertest.NewStream("POST", path, "content-type", "application/grpc+proto")
	s.Cluster = "svc"
	s.ReqHasBody, s.ReqBodyLen = true, -1
	f.DecodeHeaders(s)
	// The second message comes in two pieces.
	second := frame(1)
	if _, err := s.DecodeBody(frame(2), second[:3], second[3:]); err != nil {
		t.Fatal(err)
	}
	s.Status, s.RespHasBody, s.RespBodyLen = 200, true, -1
	s.RespHeaders = httpfiltertest.NewHeaders("content-type", "application/grpc")
	s.StreamInfo.UpstreamRequestSent = time.Now()
	f.EncodeHeaders(s)
	if _, _, err := s.EncodeBody(http.Header{"Grpc-Status": {status}}, frame(4)); err != nil {
		t.Fatal(err)
	}
	f.OnDestroy()
}

func TestStats(t *testing.T) {
	allow := &grpcstatsv3.FilterConfig{PerMethodStatSpecifier: &grpcstatsv3.FilterConfig_IndividualMethodStatsAllowlist{
		IndividualMethodStatsAllowlist: &corev3.GrpcMethodList{Services: []*corev3.GrpcMethodList_Service{{Name: "pkg.Svc", MethodNames: []string{"Get"}}}},
	}}
	all := &grpcstatsv3.FilterConfig{
		PerMethodStatSpecifier: &grpcstatsv3.FilterConfig_StatsForAllMethods{StatsForAllMethods: wrapperspb.Bool(true)},
		EnableUpstreamStats:    true, ReplaceDotsInGrpcServiceName: true,
	}
	for _, tc := range []struct {
		name    string
		cfg     *grpcstatsv3.FilterConfig
		path    string
		status  string
		counts  map[string]uint64
		absent  []string
		latency string
	}{
		{"default: cluster only", &grpcstatsv3.FilterConfig{}, "/pkg.Svc/Get", "0", map[string]uint64{
			"cluster.svc.grpc.success": 1, "cluster.svc.grpc.total": 1, "cluster.svc.grpc.0": 1,
			"cluster.svc.grpc.request_message_count": 2, "cluster.svc.grpc.response_message_count": 1,
		}, []string{"cluster.svc.grpc.pkg.Svc.Get.success"}, ""},
		{"allowlisted", allow, "/pkg.Svc/Get", "5", map[string]uint64{
			"cluster.svc.grpc.pkg.Svc.Get.failure": 1, "cluster.svc.grpc.pkg.Svc.Get.5": 1, "cluster.svc.grpc.pkg.Svc.Get.total": 1,
			"cluster.svc.grpc.pkg.Svc.Get.request_message_count": 2,
		}, []string{"cluster.svc.grpc.failure"}, ""},
		{"not allowlisted", allow, "/pkg.Svc/Put?x=1", "0", map[string]uint64{
			"cluster.svc.grpc.success": 1,
		}, []string{"cluster.svc.grpc.pkg.Svc.Put.success"}, ""},
		{"all methods, dots replaced", all, "/pkg.Svc/Get", "0", map[string]uint64{
			"cluster.svc.grpc.pkg_Svc.Get.success": 1, "cluster.svc.grpc.pkg_Svc.Get.response_message_count": 1,
		}, nil, "cluster.svc.grpc.pkg_Svc.Get.upstream_rq_time"},
		{"all methods, not a method path", all, "/just-one", "0", nil, []string{"cluster.svc.grpc.success"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := stats.NewStore()
			call(t, store, tc.cfg, tc.path, tc.status)
			for name, want := range tc.counts {
				if got := store.Counter(name).Value(); got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
			for _, name := range tc.absent {
				if store.Counter(name).Value() != 0 {
					t.Errorf("%s counted", name)
				}
			}
			if tc.latency != "" && !store.Histogram(tc.latency).Used() {
				t.Errorf("%s has no sample", tc.latency)
			}
		})
	}
}

func TestNotTracked(t *testing.T) {
	store := stats.NewStore()
	c, err := Factory{}.Compile(&grpcstatsv3.FilterConfig{}, httpfilter.Context{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*httpfiltertest.Stream{
		"grpc-web":   httpfiltertest.NewStream("POST", "/a/b", "content-type", "application/grpc-web"),
		"no cluster": httpfiltertest.NewStream("POST", "/a/b", "content-type", "application/grpc"),
	} {
		if name != "no cluster" {
			s.Cluster = "svc"
		}
		f := c.NewFilter().(*filter)
		f.DecodeHeaders(s)
		s.RespHeaders = httpfiltertest.NewHeaders("grpc-status", "0")
		f.EncodeHeaders(s)
		if f.prefix != "" || len(s.Decoders)+len(s.Encoders) > 0 {
			t.Errorf("%s: tracked as %q", name, f.prefix)
		}
		f.OnDestroy()
	}
	if n := len(store.CounterNames()); n != 0 {
		t.Errorf("counters made: %v", store.CounterNames())
	}
}

func TestTrailersOnly(t *testing.T) {
	store := stats.NewStore()
	c, _ := Factory{}.Compile(&grpcstatsv3.FilterConfig{EnableUpstreamStats: true}, httpfilter.Context{Stats: store})
	f := c.NewFilter().(*filter)
	s := httpfiltertest.NewStream("POST", "/a/b", "content-type", "application/grpc")
	s.Cluster = "svc"
	f.DecodeHeaders(s)
	s.Status = 200
	s.RespHeaders = httpfiltertest.NewHeaders("grpc-status", "14")
	s.StreamInfo.UpstreamRequestSent = time.Now()
	f.EncodeHeaders(s)
	if store.Counter("cluster.svc.grpc.14").Value() != 1 || store.Counter("cluster.svc.grpc.failure").Value() != 1 {
		t.Errorf("trailers-only status not counted")
	}
	if !store.Histogram("cluster.svc.grpc.upstream_rq_time").Used() {
		t.Errorf("upstream_rq_time not recorded")
	}
}
