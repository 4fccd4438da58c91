package grpcstats

import (
	"net/http"
	"testing"

	grpcstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// stateCall runs one call through a filter compiled from cfg: the
// request has contentType and two messages (one in two pieces), the
// response is application/grpc with one message; it returns the stream.
func stateCall(t *testing.T, cfg *grpcstatsv3.FilterConfig, contentType, cluster string) *httpfiltertest.Stream {
	t.Helper()
	c, err := Factory{}.Compile(cfg, httpfilter.Context{Stats: stats.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	f := c.NewFilter().(*filter)
	s := httpfiltertest.NewStream("POST", "/pkg.Svc/Get", "content-type", contentType)
	s.Cluster = cluster
	s.ReqHasBody, s.ReqBodyLen = true, -1
	f.DecodeHeaders(s)
	second := frame(1)
	if _, err := s.DecodeBody(frame(2), second[:3], second[3:]); err != nil {
		t.Fatal(err)
	}
	s.Status, s.RespHasBody, s.RespBodyLen = 200, true, -1
	s.RespHeaders = httpfiltertest.NewHeaders("content-type", "application/grpc")
	f.EncodeHeaders(s)
	if _, _, err := s.EncodeBody(http.Header{"Grpc-Status": {"0"}}, frame(4)); err != nil {
		t.Fatal(err)
	}
	f.OnDestroy()
	return s
}

func TestEmitFilterState(t *testing.T) {
	emit := &grpcstatsv3.FilterConfig{EmitFilterState: true}
	for _, tc := range []struct {
		name        string
		cfg         *grpcstatsv3.FilterConfig
		contentType string
		cluster     string
		want        string // PLAIN form; "" for no object
	}{
		{"gRPC call", emit, "application/grpc", "svc", "2,1"},
		// The counts do not need a cluster, as the stats do.
		{"no cluster", emit, "application/grpc+proto", "", "2,1"},
		// A gRPC response to another request is counted, as in Envoy.
		{"not a gRPC request", emit, "application/json", "svc", "0,1"},
		{"off", &grpcstatsv3.FilterConfig{}, "application/grpc", "svc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stateCall(t, tc.cfg, tc.contentType, tc.cluster)
			obj := s.FilterState[StateKey]
			if tc.want == "" {
				if obj != nil {
					t.Fatalf("filter state %v, want none", obj)
				}
				return
			}
			if obj == nil {
				t.Fatalf("no filter state under %s", StateKey)
			}
			if got, ok := obj.FilterStateString(); !ok || got != tc.want {
				t.Errorf("PLAIN = %q, %v; want %q", got, ok, tc.want)
			}
			var req, resp uint64
			if tc.want == "2,1" {
				req = 2
			}
			resp = 1
			want := &grpcstatsv3.FilterObject{RequestMessageCount: req, ResponseMessageCount: resp}
			if got := obj.FilterStateProto(); !proto.Equal(got, want) {
				t.Errorf("TYPED = %v, want %v", got, want)
			}
		})
	}
}
