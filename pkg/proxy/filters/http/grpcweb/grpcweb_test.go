package grpcweb

import (
	"encoding/base64"
	"net/http"
	"testing"

	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func newFilter(t *testing.T) *filter {
	t.Helper()
	cfg, err := Factory{}.Compile(&grpcwebv3.GrpcWeb{}, httpfilter.Context{Stats: stats.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.NewFilter().(*filter)
}

func TestTextRoundTrip(t *testing.T) {
	f := newFilter(t)
	s := httpfiltertest.NewStream("POST", "/pkg.Svc/Do", "content-type", "application/grpc-web-text", "accept", "application/grpc-web-text")
	s.Cluster = "c"
	s.ReqBodyLen, s.ReqHasBody = -1, true
	f.DecodeHeaders(s)
	if ct, _ := s.ReqHeaders.Get("content-type"); ct != "application/grpc" {
		t.Errorf("content-type %q", ct)
	}
	if te, _ := s.ReqHeaders.Get("te"); te != "trailers" {
		t.Errorf("te %q", te)
	}
	// Two padded segments one after the other, cut anywhere.
	in := base64.StdEncoding.EncodeToString([]byte("\x00\x00\x00\x00\x01a")) + base64.StdEncoding.EncodeToString([]byte("b"))
	out, err := s.DecodeBody([]byte(in[:3]), []byte(in[3:7]), []byte(in[7:]))
	if err != nil || string(out) != "\x00\x00\x00\x00\x01ab" {
		t.Fatalf("decoded %q, %v", out, err)
	}

	s.Status = 200
	s.RespHeaders = httpfiltertest.NewHeaders("content-type", "application/grpc")
	s.RespBodyLen, s.RespHasBody = -1, true
	f.EncodeHeaders(s)
	if ct, _ := s.RespHeaders.Get("content-type"); ct != "application/grpc-web-text+proto" {
		t.Errorf("response content-type %q", ct)
	}
	body, trailers, err := s.EncodeBody(http.Header{"Grpc-Status": {"0"}}, []byte("\x00\x00\x00\x00\x01"), []byte("z"))
	if err != nil || trailers != nil {
		t.Fatalf("trailers %v, %v", trailers, err)
	}
	raw, err := base64.StdEncoding.DecodeString(string(body))
	if err != nil {
		t.Fatal(err)
	}
	want := "\x00\x00\x00\x00\x01z" + "\x80\x00\x00\x00\x0fgrpc-status:0\r\n"
	if string(raw) != want {
		t.Errorf("body %q, want %q", raw, want)
	}
}

func TestBadBase64(t *testing.T) {
	f := newFilter(t)
	s := httpfiltertest.NewStream("POST", "/pkg.Svc/Do", "content-type", "application/grpc-web-text")
	s.ReqBodyLen, s.ReqHasBody = -1, true
	f.DecodeHeaders(s)
	if _, err := s.DecodeBody([]byte("AAA")); err != errBase64Size {
		t.Errorf("a cut body: %v", err)
	}
	f = newFilter(t)
	s = httpfiltertest.NewStream("POST", "/pkg.Svc/Do", "content-type", "application/grpc-web-text")
	s.ReqBodyLen, s.ReqHasBody = -1, true
	f.DecodeHeaders(s)
	if _, err := s.DecodeBody([]byte("no t")); err != errBase64 {
		t.Errorf("garbage: %v", err)
	}
}

func TestNotGrpcWeb(t *testing.T) {
	f := newFilter(t)
	s := httpfiltertest.NewStream("POST", "/x", "content-type", "application/json")
	s.ReqHasBody = true
	f.DecodeHeaders(s)
	if len(s.Decoders) != 0 || f.grpcWeb {
		t.Error("a JSON request was taken for gRPC-Web")
	}
	if got := statPrefix("c", "/a.B/C"); got != "cluster.c.grpc-web.a.B.C." {
		t.Errorf("stat prefix %q", got)
	}
	if got := statPrefix("c", "/nope"); got != "" {
		t.Errorf("stat prefix of a non-gRPC path %q", got)
	}
}
