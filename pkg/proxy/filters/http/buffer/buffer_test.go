package buffer

import (
	"strings"
	"testing"

	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

func TestBuffer(t *testing.T) {
	cfg, err := Factory{}.Compile(&bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(4)}, httpfilter.Context{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	disabled, err := Factory{}.CompileRoute(&bufferv3.BufferPerRoute{Override: &bufferv3.BufferPerRoute_Disabled{Disabled: true}}, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	bigger, err := Factory{}.CompileRoute(&bufferv3.BufferPerRoute{Override: &bufferv3.BufferPerRoute_Buffer{
		Buffer: &bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(100)}}}, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		body     string
		perRoute httpfilter.RouteConfig
		want     httpfilter.Status
		buffered []int
	}{
		{"fits", "abcd", nil, httpfilter.Continue, []int{4}},
		{"too large", "abcde", nil, httpfilter.Stop, []int{4}},
		{"no body", "", nil, httpfilter.Continue, nil},
		{"disabled on the route", "abcdefgh", disabled, httpfilter.Continue, nil},
		{"the route's limit", "abcdefgh", bigger, httpfilter.Continue, []int{100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := httpfiltertest.NewStream("POST", "/")
			if tc.body != "" {
				s.Body, s.ReqHasBody, s.ReqBodyLen = []byte(tc.body), true, int64(len(tc.body))
			}
			if tc.perRoute != nil {
				s.PerRoute = map[string][]httpfilter.RouteConfig{"b": {tc.perRoute}}
			}
			if got := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); got != tc.want {
				t.Errorf("status %v, want %v", got, tc.want)
			}
			if len(s.Buffered) != len(tc.buffered) || (len(tc.buffered) > 0 && s.Buffered[0] != tc.buffered[0]) {
				t.Errorf("buffered with limits %v, want %v", s.Buffered, tc.buffered)
			}
			if tc.want == httpfilter.Stop && (s.Reply == nil || s.Reply.Status != 413) {
				t.Errorf("reply %+v, want 413", s.Reply)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	if _, err := (Factory{}).Compile(&bufferv3.Buffer{}, httpfilter.Context{}); err == nil || !strings.HasPrefix(err.Error(), "max_request_bytes: ") {
		t.Errorf("error %v", err)
	}
	if _, err := (Factory{}).CompileRoute(&bufferv3.BufferPerRoute{Override: &bufferv3.BufferPerRoute_Buffer{Buffer: &bufferv3.Buffer{}}}, httpfilter.Context{}); err == nil || !strings.HasPrefix(err.Error(), "buffer.max_request_bytes: ") {
		t.Errorf("error %v", err)
	}
	if _, err := (Factory{}).CompileRoute(&bufferv3.BufferPerRoute{}, httpfilter.Context{}); err == nil {
		t.Error("an empty BufferPerRoute was accepted")
	}
}
