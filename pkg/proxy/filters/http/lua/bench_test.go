package lua

import (
	"testing"

	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// BenchmarkTouchOneHeader is a Lua filter that sets one header, per
// request (envoy_on_request through DecodeHeaders) and per response
// (envoy_on_response through EncodeHeaders): issue #15 asks for at most
// 5 µs per direction. Each iteration is one request's filter, from
// NewFilter to OnDestroy.
func BenchmarkTouchOneHeader(b *testing.B) {
	f := compile(b, &luav3.Lua{DefaultSourceCode: source(`
function envoy_on_request(request_handle)
  request_handle:headers():replace("x-lua", "request")
end
function envoy_on_response(response_handle)
  response_handle:headers():replace("x-lua", "response")
end`)}, nil)
	b.Run("request", func(b *testing.B) {
		s := request("/items/7", "user-agent", "bench", "accept", "*/*")
		b.ReportAllocs()
		for b.Loop() {
			sf := f.NewFilter().(*streamFilter)
			if sf.DecodeHeaders(s) != httpfilter.Continue {
				b.Fatal("the script failed")
			}
			sf.OnDestroy()
		}
		if v, _ := s.ReqHeaders.Get("x-lua"); v != "request" {
			b.Fatalf("x-lua = %q", v)
		}
	})
	b.Run("response", func(b *testing.B) {
		s := response(request("/items/7"), 200, "content-type", "application/json")
		b.ReportAllocs()
		for b.Loop() {
			sf := f.NewFilter().(*streamFilter)
			if sf.EncodeHeaders(s) != httpfilter.Continue {
				b.Fatal("the script failed")
			}
			sf.OnDestroy()
		}
		if v, _ := s.RespHeaders.Get("x-lua"); v != "response" {
			b.Fatalf("x-lua = %q", v)
		}
	})
	// A script that names body() and a response with a body: the
	// script runs in a goroutine of its own, in case it waits for the
	// body (here it does not).
	fb := compile(b, &luav3.Lua{DefaultSourceCode: source(`
function envoy_on_response(response_handle)
  if response_handle:headers():get("x-want-body") then response_handle:body() end
  response_handle:headers():replace("x-lua", "response")
end`)}, nil)
	b.Run("response-may-read-body", func(b *testing.B) {
		s := response(request("/items/7"), 200, "content-type", "application/json")
		s.RespHasBody, s.RespBodyLen = true, 100
		b.ReportAllocs()
		for b.Loop() {
			sf := fb.NewFilter().(*streamFilter)
			if sf.EncodeHeaders(s) != httpfilter.Continue {
				b.Fatal("the script failed")
			}
			sf.OnDestroy()
		}
		if v, _ := s.RespHeaders.Get("x-lua"); v != "response" || len(s.Encoders) != 0 {
			b.Fatalf("x-lua = %q, %d encoders", v, len(s.Encoders))
		}
	})
}
