package lua

import (
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		config *luav3.Lua
		want   string
	}{
		"syntax error": {
			config: &luav3.Lua{DefaultSourceCode: source("function envoy_on_request(h) h:headers( end")},
			want:   "default_source_code.inline_string: script does not compile",
		},
		"inline_code": {
			//lint:ignore SA1019 inline_code is deprecated, and still accepted.
			config: &luav3.Lua{InlineCode: "x = = 1"},
			want:   "inline_code: script does not compile",
		},
		"error at load": {
			config: &luav3.Lua{DefaultSourceCode: source(`error("boom")`)},
			want:   "default_source_code.inline_string: script load error: default_source_code:1: boom",
		},
		"loop at load": {
			config: &luav3.Lua{DefaultSourceCode: source(`while true do end`)},
			want:   "default_source_code.inline_string: script did not finish loading within",
		},
		"named source": {
			config: &luav3.Lua{SourceCodes: map[string]*corev3.DataSource{"a": source("x = = 1")}},
			want:   `source_codes["a"].inline_string: script does not compile`,
		},
		"default source": {
			config: &luav3.Lua{DefaultSourceCode: source("local")},
			want:   "default_source_code.inline_string: script does not compile",
		},
		"both defaults": {
			//lint:ignore SA1019 inline_code is deprecated, and still accepted.
			config: &luav3.Lua{InlineCode: "x = 1", DefaultSourceCode: source("x = 1")},
			want:   "default_source_code: only one of inline_code or default_source_code may be set",
		},
		"missing file": {
			config: &luav3.Lua{DefaultSourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "/nonexistent/x.lua"}}},
			want:   "default_source_code.filename:",
		},
		"shared_vm_id without a registry": {
			config: &luav3.Lua{SharedVmId: "vm"},
			want:   "shared_vm_id: not supported by Outrigger here",
		},
		"package_cpaths": {
			config: &luav3.Lua{PackageCpaths: []string{"/x/?.so"}},
			want:   "package_cpaths: not supported by Outrigger",
		},
		"module not found at load": {
			config: &luav3.Lua{PackagePaths: []string{"/nonexistent/?.lua"}, DefaultSourceCode: source(`local m = require("absent.module")`)},
			want:   "script load error: default_source_code:1: module absent.module not found",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.config, httpfilter.Context{Name: "lua", Stats: stats.NewStore(), Log: logr.Discard()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRequestHeaders(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  local hs = h:headers()
  hs:add("x-added", "one")
  hs:add("x-added", 2)
  hs:replace("x-replaced", "new")
  hs:remove("x-removed")
  hs:add("x-path", hs:get(":path"))
  hs:add("x-method", hs:get(":method"))
  hs:add("x-authority", hs:get(":authority"))
  hs:add("x-multi-joined", hs:get("x-multi"))
  hs:add("x-multi-count", hs:getNumValues("x-multi"))
  hs:add("x-multi-second", hs:getAtIndex("x-multi", 1))
  if hs:get("x-absent") ~= nil or hs:getAtIndex("x-multi", 5) ~= nil then error("not nil") end
  local seen = {}
  for k, v in hs:pairs() do seen[#seen+1] = k .. "=" .. v end
  hs:add("x-pairs", table.concat(seen, ";"))
  hs:replace(":path", "/rewritten?q=1")
end`)
	s := request("/orig", "x-replaced", "old", "x-removed", "gone", "x-multi", "a", "x-multi", "b")
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("DecodeHeaders = %v, reply %+v, logs %v", st, s.Reply, *f.logs)
	}
	h := s.ReqHeaders
	for name, want := range map[string]string{
		"x-added":        "one,2",
		"x-replaced":     "new",
		"x-path":         "/orig",
		"x-method":       "GET",
		"x-authority":    "example.com",
		"x-multi-joined": "a,b",
		"x-multi-count":  "2",
		"x-multi-second": "b",
		"x-pairs": ":authority=example.com;:path=/orig;:method=GET;:scheme=http;x-multi=a;x-multi=b;x-added=one;x-added=2;" +
			"x-replaced=new;x-path=/orig;x-method=GET;x-authority=example.com;x-multi-joined=a,b;x-multi-count=2;x-multi-second=b",
	} {
		if got, _ := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, ok := h.Get("x-removed"); ok {
		t.Error("x-removed is still there")
	}
	if s.Req.Path != "/rewritten?q=1" {
		t.Errorf(":path = %q", s.Req.Path)
	}
	if s.RouteCleared != 1 {
		t.Errorf("route cache cleared %d times, want 1", s.RouteCleared)
	}
}

func TestClearRouteCacheFalse(t *testing.T) {
	f := compile(t, &luav3.Lua{DefaultSourceCode: source(`function envoy_on_request(h) h:headers():add("x", "y") end`)}, nil)
	f.clearRouteCache = false
	s := request("/")
	f.DecodeHeaders(s)
	if s.RouteCleared != 0 {
		t.Errorf("route cache cleared %d times, want 0", s.RouteCleared)
	}
}

func TestResponseHeaders(t *testing.T) {
	f := inline(t, `
function envoy_on_response(h)
  local hs = h:headers()
  hs:add("x-status", hs:get(":status"))
  hs:remove("server-secret")
  hs:replace("content-type", "text/html")
end`)
	s := response(request("/"), 404, "server-secret", "s", "content-type", "application/json")
	if st := f.EncodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("EncodeHeaders = %v", st)
	}
	want := map[string]string{"x-status": "404", "content-type": "text/html"}
	for name, v := range want {
		if got, _ := s.RespHeaders.Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	if _, ok := s.RespHeaders.Get("server-secret"); ok {
		t.Error("server-secret is still there")
	}
}

func TestRespond(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  h:respond({[":status"] = "403", ["x-reason"] = {"a", "b"}, ["content-type"] = "application/json"}, '{"denied":true}')
  h:headers():add("x-after", "never")
end`)
	s := request("/")
	if st := f.DecodeHeaders(s); st != httpfilter.Stop {
		t.Fatalf("DecodeHeaders = %v", st)
	}
	if s.Reply == nil || s.Reply.Status != 403 || s.Reply.Body != `{"denied":true}` || s.Reply.Details != "lua_response" {
		t.Fatalf("reply = %+v", s.Reply)
	}
	if _, ok := s.ReqHeaders.Get("x-after"); ok {
		t.Error("the script went on after respond()")
	}
	// The reply comes back through the filter, which adds its headers.
	response(s, 403, "content-type", "text/plain")
	f.EncodeHeaders(s)
	if got, _ := s.RespHeaders.Get("x-reason"); got != "a,b" {
		t.Errorf("x-reason = %q", got)
	}
	if got, _ := s.RespHeaders.Get("content-type"); got != "application/json" {
		t.Errorf("content-type = %q", got)
	}
	if f.errorsCount() != 0 {
		t.Errorf("lua.errors = %d, want 0", f.errorsCount())
	}
}

func TestRespondBadStatus(t *testing.T) {
	f := inline(t, `function envoy_on_request(h) h:respond({[":status"] = "99"}, "x") end`)
	s := request("/")
	f.DecodeHeaders(s)
	if s.Reply == nil || s.Reply.Status != 500 || s.Reply.Details != "lua_script_error" {
		t.Fatalf("reply = %+v", s.Reply)
	}
	if f.errorsCount() != 1 || !strings.Contains(strings.Join(*f.logs, "\n"), ":status must be between 200-599") {
		t.Errorf("lua.errors = %d, logs %v", f.errorsCount(), *f.logs)
	}
}

func TestRuntimeError(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  local t = nil
  return t.field
end
function envoy_on_response(h)
  error("response boom")
end`)
	s := request("/")
	if st := f.DecodeHeaders(s); st != httpfilter.Stop {
		t.Fatalf("DecodeHeaders = %v", st)
	}
	if s.Reply == nil || s.Reply.Status != 500 {
		t.Fatalf("reply = %+v", s.Reply)
	}
	// A response script's failure leaves the response as it is.
	s = response(request("/"), 200)
	if st := f.EncodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("EncodeHeaders = %v", st)
	}
	if f.errorsCount() != 2 {
		t.Errorf("lua.errors = %d, want 2", f.errorsCount())
	}
	logs := strings.Join(*f.logs, "\n")
	if !strings.Contains(logs, "script log: default_source_code:4:") || !strings.Contains(logs, "response boom") {
		t.Errorf("logs = %s", logs)
	}
}

func TestLoopIsStopped(t *testing.T) {
	f := inline(t, `
n = 0
function envoy_on_request(h)
  n = n + 1
  if h:headers():get("x-loop") then while true do end end
  h:headers():add("x-n", n)
end`).withBudget(50 * time.Millisecond)
	s := request("/", "x-loop", "1")
	start := time.Now()
	if st := f.DecodeHeaders(s); st != httpfilter.Stop {
		t.Fatalf("DecodeHeaders = %v", st)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the loop ran %v", time.Since(start))
	}
	if s.Reply == nil || s.Reply.Status != 500 || f.errorsCount() != 1 {
		t.Fatalf("reply = %+v, lua.errors = %d", s.Reply, f.errorsCount())
	}
	if !strings.Contains(strings.Join(*f.logs, "\n"), "time budget") {
		t.Errorf("logs = %v", *f.logs)
	}
	// The stopped state was dropped: the next request runs on the other
	// (fresh) states, and works.
	for range 3 {
		s = request("/")
		if st := f.DecodeHeaders(s); st != httpfilter.Continue {
			t.Fatalf("DecodeHeaders after the loop = %v, reply %+v", st, s.Reply)
		}
	}
}

func TestStatePersistsGlobals(t *testing.T) {
	f := inline(t, `
count = 0
function envoy_on_request(h)
  count = count + 1
  h:headers():add("x-count", count)
end`)
	var last string
	for range 3 {
		s := request("/")
		f.DecodeHeaders(s)
		last, _ = s.ReqHeaders.Get("x-count")
	}
	// Sequential streams share the pool's one idle state.
	if last != "3" {
		t.Errorf("x-count = %q, want 3", last)
	}
}

func TestUnsupportedAPI(t *testing.T) {
	for name, code := range map[string]string{
		"handle method":  `h:importPublicKey("x", 1)`,
		"header method":  `h:headers():setHttp1ReasonPhrase("x")`,
		"streamInfo":     `h:streamInfo():filterState()`,
		"pseudo-header":  `h:headers():replace(":method", "POST")`,
		"string.rep":     `string.rep("x", 1e9)`,
		"io":             `io.open("/etc/passwd")`,
		"respond in rsp": ``,
	} {
		t.Run(name, func(t *testing.T) {
			var f testFilter
			var s *httpfiltertest.Stream
			switch name {
			case "respond in rsp":
				f = inline(t, `function envoy_on_response(h) h:respond({[":status"]="200"}) end`)
				s = response(request("/"), 200)
				f.EncodeHeaders(s)
			default:
				f = inline(t, "function envoy_on_request(h) "+code+" end")
				s = request("/")
				f.DecodeHeaders(s)
			}
			logs := strings.Join(*f.logs, "\n")
			if f.errorsCount() != 1 || !(strings.Contains(logs, "not supported") || strings.Contains(logs, "not currently supported") ||
				strings.Contains(logs, "would be over") || strings.Contains(logs, "attempt to index a non-table object(nil) with key 'open'")) {
				t.Errorf("lua.errors = %d, logs %s", f.errorsCount(), logs)
			}
		})
	}
}

func TestBody(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  local b = h:body()
  h:headers():add("x-len", b:length())
  h:headers():add("x-head", b:getBytes(0, 5))
  b:setBytes(string.upper(b:getBytes(0, b:length())) .. "!")
  h:headers():add("x-new-len", h:body():length())
end`)
	s := request("/")
	s.Body, s.ReqHasBody, s.ReqBodyLen = []byte("hello world"), true, 11
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("DecodeHeaders = %v, logs %v", st, *f.logs)
	}
	for name, want := range map[string]string{"x-len": "11", "x-head": "hello", "x-new-len": "12"} {
		if got, _ := s.ReqHeaders.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	out, err := s.DecodeBody([]byte("hello "), []byte("world"))
	if err != nil || string(out) != "HELLO WORLD!" {
		t.Errorf("body = %q, %v", out, err)
	}
}

func TestResponseBody(t *testing.T) {
	f := inline(t, `
function envoy_on_response(h)
  local b = h:body()
  h:headers():add("x-len", b:length())
  b:setBytes("<html>" .. b:getBytes(0, b:length()) .. "</html>")
  h:headers():replace("content-type", "text/html")
end`)
	s := response(request("/"), 200, "content-type", "application/json")
	s.RespHasBody, s.RespBodyLen = true, 3
	if st := f.EncodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("EncodeHeaders = %v", st)
	}
	if len(s.Encoders) != 1 {
		t.Fatalf("%d body encoders, want 1", len(s.Encoders))
	}
	if hh, ok := s.Encoders[0].(httpfilter.HeadHolder); !ok || !hh.HoldsHead() {
		t.Error("the encoder does not hold the head")
	}
	out, _, err := s.EncodeBody(nil, []byte("ab"), []byte("c"))
	if err != nil || string(out) != "<html>abc</html>" {
		t.Errorf("body = %q, %v", out, err)
	}
	for name, want := range map[string]string{"x-len": "3", "content-type": "text/html"} {
		if got, _ := s.RespHeaders.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	f.of(s).OnDestroy()

	// A response without a body: body() is nil, and the script runs at
	// once.
	f2 := inline(t, `function envoy_on_response(h) h:headers():add("x-nil", tostring(h:body() == nil)) end`)
	s = response(request("/"), 204)
	f2.EncodeHeaders(s)
	if got, _ := s.RespHeaders.Get("x-nil"); got != "true" || len(s.Encoders) != 0 {
		t.Errorf("x-nil = %q, %d encoders", got, len(s.Encoders))
	}
}

func TestResponseTrailers(t *testing.T) {
	f := inline(t, `
function envoy_on_response(h)
  local t = h:trailers()
  t:add("x-status-trailer", t:get("grpc-status"))
  t:add("x-trailer-count", t:getNumValues("x-multi"))
  t:replace("grpc-message", "rewritten")
  t:remove("x-drop")
  local n = 0
  for k, v in t:pairs() do n = n + 1 end
  t:add("x-pairs", n)
  h:headers():add("x-late", "1")
end`)
	s := response(request("/"), 200)
	s.RespHasBody, s.RespBodyLen = true, -1
	f.EncodeHeaders(s)
	out, tr, err := s.EncodeBody(http.Header{"Grpc-Status": {"0"}, "X-Multi": {"a", "b"}, "X-Drop": {"1"}}, []byte("ab"), []byte("cd"))
	if err != nil || string(out) != "abcd" {
		t.Fatalf("body %q, %v", out, err)
	}
	want := http.Header{"Grpc-Status": {"0"}, "X-Multi": {"a", "b"}, "Grpc-Message": {"rewritten"},
		"X-Status-Trailer": {"0"}, "X-Trailer-Count": {"2"}, "X-Pairs": {"6"}}
	if diff := cmp.Diff(want, tr); diff != "" {
		t.Errorf("trailers (-want +got):\n%s", diff)
	}
	// The body went on while the script waited, and the head with it.
	if got, _ := s.RespHeaders.Get("x-late"); got != "" || !strings.Contains(strings.Join(*f.logs, "\n"), "header map can no longer be modified") {
		t.Errorf("x-late = %q, logs %v", got, *f.logs)
	}
	f.of(s).OnDestroy()

	// No trailers: nil.
	f2 := inline(t, `function envoy_on_response(h) if h:trailers() == nil then h:logInfo("no trailers") end end`)
	s = response(request("/"), 200)
	s.RespHasBody = true
	f2.EncodeHeaders(s)
	if _, _, err := s.EncodeBody(nil, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(*f2.logs, "\n"), "no trailers") {
		t.Errorf("logs %v", *f2.logs)
	}
	f2.of(s).OnDestroy()

	// After body(), trailers() returns at once and the headers can still
	// change.
	f3 := inline(t, `function envoy_on_response(h) h:body() h:headers():add("x-t", h:trailers():get("a")) end`)
	s = response(request("/"), 200)
	s.RespHasBody, s.RespBodyLen = true, -1
	f3.EncodeHeaders(s)
	if _, _, err := s.EncodeBody(http.Header{"A": {"1"}}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.RespHeaders.Get("x-t"); got != "1" {
		t.Errorf("x-t = %q, logs %v", got, *f3.logs)
	}
	f3.of(s).OnDestroy()
}

func TestBodyChunks(t *testing.T) {
	tests := map[string]struct {
		code, want, wantLog string
	}{
		"every chunk": {
			code: `local n = 0
  for chunk in h:bodyChunks() do
    n = n + 1
    chunk:setBytes(string.upper(chunk:getBytes(0, chunk:length())))
  end
  if n ~= 3 then error("chunks: " .. n) end
  if h:body() then error("a body after streaming") end`,
			want: "AB-CD-EF",
		},
		"break after the first": {
			code: `for chunk in h:bodyChunks() do chunk:setBytes("<" .. chunk:length() .. ">") break end`,
			want: "<3>cd-ef",
		},
		"body() while streaming": {
			code:    `for chunk in h:bodyChunks() do h:body() end`,
			want:    "ab-cd-ef",
			wantLog: "cannot call body() after body streaming has started",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := inline(t, "function envoy_on_response(h)\n  "+tc.code+"\nend")
			s := response(request("/"), 200)
			s.RespHasBody, s.RespBodyLen = true, -1
			f.EncodeHeaders(s)
			out, _, err := s.EncodeBody(nil, []byte("ab-"), []byte("cd-"), []byte("ef"))
			if err != nil || string(out) != tc.want {
				t.Errorf("body = %q, %v; want %q", out, err, tc.want)
			}
			if logs := strings.Join(*f.logs, "\n"); !strings.Contains(logs, tc.wantLog) || (tc.wantLog == "") != (f.errorsCount() == 0) {
				t.Errorf("lua.errors = %d, logs %s", f.errorsCount(), logs)
			}
			f.of(s).OnDestroy()
		})
	}
	// The stream ends in the middle: the script is stopped.
	f := inline(t, `function envoy_on_response(h) for c in h:bodyChunks() do end h:headers():add("x-after", "1") end`)
	s := response(request("/"), 200)
	s.RespHasBody = true
	f.EncodeHeaders(s)
	if out, err := s.Encoders[0].EncodeData([]byte("x")); err != nil || string(out) != "x" {
		t.Errorf("EncodeData = %q, %v", out, err)
	}
	f.of(s).OnDestroy()
	if _, ok := s.RespHeaders.Get("x-after"); ok {
		t.Error("the script went on after the stream ended")
	}
}

// TestBodyChunksHeadGone: the response's head leaves with the first
// bytes a bodyChunks() script lets through; the headers may change until
// then, and a change afterwards is a script error, as in Envoy.
func TestBodyChunksHeadGone(t *testing.T) {
	f := inline(t, `
function envoy_on_response(h)
  local n = 0
  for chunk in h:bodyChunks() do
    n = n + 1
    if n == 1 then chunk:setBytes("") end
    h:headers():replace("x-seen", n)
  end
end`)
	s := response(request("/"), 200)
	s.RespHasBody, s.RespBodyLen = true, -1
	f.EncodeHeaders(s)
	out, _, err := s.EncodeBody(nil, []byte("ab-"), []byte("cd-"), []byte("ef"))
	if err != nil || string(out) != "cd-ef" {
		t.Errorf("body = %q, %v", out, err)
	}
	// The first piece left empty, so the head was still held at the
	// second; the second's bytes took the head along.
	if got, _ := s.RespHeaders.Get("x-seen"); got != "2" {
		t.Errorf("x-seen = %q", got)
	}
	if logs := strings.Join(*f.logs, "\n"); !strings.Contains(logs, "header map can no longer be modified") || f.errorsCount() != 1 {
		t.Errorf("lua.errors = %d, logs %s", f.errorsCount(), logs)
	}
	f.of(s).OnDestroy()
}

func TestResponseBodyStreamGone(t *testing.T) {
	f := inline(t, `
function envoy_on_response(h)
  pcall(function() h:body() end)
  h:headers():add("x-after", "1")
end`)
	s := response(request("/"), 200)
	s.RespHasBody, s.RespBodyLen = true, -1
	f.EncodeHeaders(s)
	// The stream ends before the body does: the script is stopped, even
	// though it caught the first error, and its state goes back.
	f.of(s).OnDestroy()
	if _, ok := s.RespHeaders.Get("x-after"); ok {
		t.Error("the script reached the stream after it ended")
	}
	if f.errorsCount() != 0 {
		t.Errorf("lua.errors = %d", f.errorsCount())
	}
	if n := f.def.free.Idle(); n != 1 {
		t.Errorf("%d idle states, want 1", n)
	}
}

func TestBodyErrors(t *testing.T) {
	tests := map[string]struct {
		code, want string
		body       []byte
	}{
		"out of range": {code: `h:body():getBytes(3, 100)`, want: "index + length must be <= buffer size", body: []byte("abc")},
		"negative":     {code: `h:body():getBytes(-1, 1)`, want: "index/length must be >= 0", body: []byte("abc")},
		"no body":      {code: `if h:body() ~= nil then error("a body") end h:body(true):setBytes("x")`, want: "setBytes: adding a body"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := inline(t, "function envoy_on_request(h) "+tc.code+" end")
			s := request("/")
			if tc.body != nil {
				s.Body, s.ReqHasBody, s.ReqBodyLen = tc.body, true, int64(len(tc.body))
			}
			f.DecodeHeaders(s)
			if logs := strings.Join(*f.logs, "\n"); !strings.Contains(logs, tc.want) {
				t.Errorf("logs = %s, want %q", logs, tc.want)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	f := inline(t, `function envoy_on_request(h) h:body() end`)
	s := request("/")
	s.Body, s.ReqHasBody = make([]byte, maxBody+1), true
	if st := f.DecodeHeaders(s); st != httpfilter.Stop {
		t.Fatalf("DecodeHeaders = %v", st)
	}
	if s.Reply == nil || s.Reply.Status != 413 {
		t.Errorf("reply = %+v", s.Reply)
	}
	if f.errorsCount() != 0 {
		t.Errorf("lua.errors = %d: the stream's own answer is not a script error", f.errorsCount())
	}
}

func TestPerRoute(t *testing.T) {
	f := compile(t, &luav3.Lua{
		DefaultSourceCode: source(`function envoy_on_request(h) h:headers():add("x-script", "default") end`),
		SourceCodes: map[string]*corev3.DataSource{
			"named": source(`function envoy_on_request(h) h:headers():add("x-script", "named") end`),
		},
	}, nil)
	routeConfig := func(p *luav3.LuaPerRoute) httpfilter.RouteConfig {
		rc, err := Factory{}.CompileRoute(p, httpfilter.Context{Name: "lua"})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	tests := map[string]struct {
		rc   httpfilter.RouteConfig
		want string
	}{
		"none":     {want: "default"},
		"disabled": {rc: routeConfig(&luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_Disabled{Disabled: true}})},
		"named":    {rc: routeConfig(&luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_Name{Name: "named"}}), want: "named"},
		"unknown":  {rc: routeConfig(&luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_Name{Name: "other"}})},
		"own": {rc: routeConfig(&luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_SourceCode{SourceCode: source(
			`function envoy_on_request(h) h:headers():add("x-script", "route") end`)}}), want: "route"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := request("/")
			if tc.rc != nil {
				s.PerRoute = map[string][]httpfilter.RouteConfig{"lua": {tc.rc}}
			}
			f.DecodeHeaders(s)
			if got, _ := s.ReqHeaders.Get("x-script"); got != tc.want {
				t.Errorf("x-script = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := (Factory{}).CompileRoute(&luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_SourceCode{SourceCode: source("x = ")}}, httpfilter.Context{}); err == nil ||
		!strings.HasPrefix(err.Error(), "source_code.inline_string: script does not compile") {
		t.Errorf("CompileRoute error = %v", err)
	}
}

// TestRequire checks that scripts load Lua modules with require, from
// package_paths' patterns ahead of the default path (Envoy's Lua sandbox
// does require("lib.mylibrary")), per filter and for a route's own script.
func TestRequire(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeModule := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModule("lib/mylibrary.lua", `local M = {} function M.foobar() return "bar" end return M`)
	writeModule("lib/other.lua", `return {name = function() return "route" end}`)

	f := compile(t, &luav3.Lua{
		PackagePaths: []string{filepath.Join(dir, "?.lua"), filepath.Join(dir, "?/init.lua")},
		DefaultSourceCode: source(`
local mylibrary = require("lib.mylibrary")
function envoy_on_request(h)
  h:headers():add("foo", mylibrary.foobar())
  h:headers():add("x-path-head", string.sub(package.path, 1, #"` + dir + `"))
end`),
	}, nil)
	s := request("/")
	f.DecodeHeaders(s)
	if got, _ := s.ReqHeaders.Get("foo"); got != "bar" {
		t.Errorf("foo = %q, want bar (logs %v)", got, *f.logs)
	}
	if got, _ := s.ReqHeaders.Get("x-path-head"); got != dir {
		t.Errorf("package.path starts with %q, want the configured pattern's directory %q", got, dir)
	}

	// A route's own script has its own patterns, not the filter's.
	rc, err := Factory{}.CompileRoute(&luav3.LuaPerRoute{
		PackagePaths: []string{filepath.Join(dir, "?.lua")},
		Override: &luav3.LuaPerRoute_SourceCode{SourceCode: source(
			`local o = require("lib.other") function envoy_on_request(h) h:headers():add("x-script", o.name()) end`)},
	}, httpfilter.Context{Name: "lua"})
	if err != nil {
		t.Fatal(err)
	}
	s = request("/")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"lua": {rc}}
	f.DecodeHeaders(s)
	if got, _ := s.ReqHeaders.Get("x-script"); got != "route" {
		t.Errorf("x-script = %q, want route", got)
	}
	if _, err := (Factory{}).CompileRoute(&luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_SourceCode{SourceCode: source(
		`local o = require("lib.other")`)}}, httpfilter.Context{Name: "lua"}); err == nil || !strings.Contains(err.Error(), "module lib.other not found") {
		t.Errorf("a route script without the patterns: err = %v, want module not found", err)
	}
}

func TestFilterContext(t *testing.T) {
	own, _ := structpb.NewStruct(map[string]any{"mode": "filter", "limit": 3})
	f := compile(t, &luav3.Lua{FilterContext: own, DefaultSourceCode: source(`
function envoy_on_request(h)
  local fc = h:filterContext()
  h:headers():add("x-mode", fc.mode or "none")
end`)}, nil)
	s := request("/")
	f.DecodeHeaders(s)
	if got, _ := s.ReqHeaders.Get("x-mode"); got != "filter" {
		t.Errorf("x-mode = %q, want filter", got)
	}
	routeCtx, _ := structpb.NewStruct(map[string]any{"mode": "route"})
	rc, err := Factory{}.CompileRoute(&luav3.LuaPerRoute{
		Override:      &luav3.LuaPerRoute_Name{Name: "missing"},
		FilterContext: routeCtx,
	}, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	rc.(*routeConfig).name, rc.(*routeConfig).script = "", f.def
	s = request("/")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"lua": {rc}}
	f.DecodeHeaders(s)
	if got, _ := s.ReqHeaders.Get("x-mode"); got != "route" {
		t.Errorf("x-mode = %q, want route", got)
	}
}

func TestStreamInfoAndMetadata(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  local si = h:streamInfo()
  local hs = h:headers()
  hs:add("x-proto", si:protocol())
  hs:add("x-local", si:downstreamLocalAddress())
  hs:add("x-direct", si:downstreamDirectRemoteAddress())
  hs:add("x-sni", si:requestedServerName())
  si:dynamicMetadata():set("my.ns", "key", {a = 1, list = {"x", "y"}})
  hs:add("x-dyn", si:dynamicMetadata():get("my.ns")["key"]["list"][2])
  hs:add("x-route-meta", h:metadata():get("owner"))
  hs:add("x-ssl", tostring(h:connection():ssl()))
  h:logInfo("info line")
  h:logDebug("debug line")
  h:logWarn("warn line")
  h:logTrace("trace line")
  h:logErr("err line")
  h:logCritical("critical line")
  hs:add("x-b64", h:base64Escape("hi!"))
end`)
	s := request("/")
	s.StreamInfo = httpfilter.StreamInfo{Protocol: "HTTP/1.1", LocalAddress: "127.0.0.1:80", DirectRemoteAddress: "127.0.0.2:5000", RequestedServerName: "sni.example"}
	meta, _ := structpb.NewStruct(map[string]any{"owner": "payments"})
	s.Matched = &router.Route{Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.filters.http.lua": meta}}}
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("DecodeHeaders = %v, logs %v", st, *f.logs)
	}
	for name, want := range map[string]string{
		"x-proto": "HTTP/1.1", "x-local": "127.0.0.1:80", "x-direct": "127.0.0.2:5000", "x-sni": "sni.example",
		"x-dyn": "y", "x-route-meta": "payments", "x-ssl": "nil", "x-b64": "aGkh",
	} {
		if got, _ := s.ReqHeaders.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	got := s.Metadata.GetFilterMetadata()["my.ns"].GetFields()["key"].GetStructValue().GetFields()["a"].GetNumberValue()
	if got != 1 {
		t.Errorf("dynamic metadata my.ns.key.a = %v, want 1", got)
	}
	logs := strings.Join(*f.logs, "\n")
	for _, l := range []string{"info", "debug", "warn", "trace", "err", "critical"} {
		if !strings.Contains(logs, "script log: "+l+" line") {
			t.Errorf("no %s line in %s", l, logs)
		}
	}
	// With TLS, ssl() is an object.
	f2 := inline(t, `
function envoy_on_request(h)
  local ssl = h:connection():ssl()
  h:headers():add("x-v", ssl:tlsVersion())
  h:headers():add("x-dns", table.concat(ssl:dnsSansPeerCertificate(), ","))
  h:headers():add("x-same", tostring(h:streamInfo():downstreamSslConnection():peerCertificatePresented()))
  h:headers():add("x-route", h:streamInfo():routeName())
end`)
	s = request("/")
	s.StreamInfo.TLS = &accesslog.TLSInfo{Version: "TLSv1.3", PeerCertificate: &x509.Certificate{DNSNames: []string{"a.example", "b.example"}}}
	s.Matched = &router.Route{Name: "items"}
	f2.DecodeHeaders(s)
	for name, want := range map[string]string{"x-v": "TLSv1.3", "x-dns": "a.example,b.example", "x-same": "true", "x-route": "items"} {
		if got, _ := s.ReqHeaders.Get(name); got != want {
			t.Errorf("%s = %q, want %q (logs %v)", name, got, want, *f2.logs)
		}
	}
}

func TestHTTPCall(t *testing.T) {
	var gotBody, gotHeader, gotHost, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method == "POST" {
			gotBody, gotHeader, gotHost, gotPath = string(b), r.Header.Get("x-call"), r.Host, r.URL.RequestURI()
		}
		w.Header().Add("x-dup", "1")
		w.Header().Add("x-dup", "2")
		_, _ = io.WriteString(w, "from auth")
	}))
	defer srv.Close()
	f := compile(t, &luav3.Lua{DefaultSourceCode: source(`
function envoy_on_request(h)
  local headers, body = h:httpCall("auth", {[":method"] = "POST", [":path"] = "/check?x=1", [":authority"] = "auth.local", ["x-call"] = "yes"}, "payload", 5000)
  h:headers():add("x-status", headers[":status"])
  h:headers():add("x-dup", headers["x-dup"])
  h:headers():add("x-body", body)
  local headers2 = h:httpCall("auth", {[":method"] = "GET", [":path"] = "/", [":authority"] = "a"}, nil, {timeout_ms = 5000, return_duplicate_headers = true})
  h:headers():add("x-dups", table.concat(headers2["x-dup"], "+"))
  local h3, b3 = h:httpCall("down", {[":method"] = "GET", [":path"] = "/", [":authority"] = "a"}, nil, 1000)
  h:headers():add("x-down", h3[":status"] .. " " .. b3)
end`)}, loopbackServices{"auth": srv.Listener.Addr().String(), "down": closedAddr(t)})
	s := request("/")
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("DecodeHeaders = %v, logs %v", st, *f.logs)
	}
	got := map[string]string{}
	for _, n := range []string{"x-status", "x-dup", "x-body", "x-dups", "x-down"} {
		got[n], _ = s.ReqHeaders.Get(n)
	}
	want := map[string]string{"x-status": "200", "x-dup": "2", "x-body": "from auth", "x-dups": "1+2", "x-down": "503 upstream failure"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if gotBody != "payload" || gotHeader != "yes" || gotHost != "auth.local" || gotPath != "/check?x=1" {
		t.Errorf("the service saw body %q, x-call %q, host %q, path %q", gotBody, gotHeader, gotHost, gotPath)
	}
}

func TestHTTPCallErrors(t *testing.T) {
	tests := map[string]struct{ code, want string }{
		"unknown cluster": {`h:httpCall("nope", {[":method"]="GET", [":path"]="/", [":authority"]="a"}, nil, 10)`, "http call cluster invalid. Must be configured"},
		"missing header":  {`h:httpCall("auth", {[":method"]="GET", [":path"]="/"}, nil, 10)`, "http call headers must include ':path', ':method', and ':authority'"},
		"negative":        {`h:httpCall("auth", {[":method"]="GET", [":path"]="/", [":authority"]="a"}, nil, -1)`, "http call timeout must be >= 0"},
		"async flag":      {`h:httpCall("auth", {[":method"]="GET", [":path"]="/", [":authority"]="a"}, nil, 10, "yes")`, "asynchronous flag must be"},
		"option":          {`h:httpCall("auth", {[":method"]="GET", [":path"]="/", [":authority"]="a"}, nil, {trace_sampled = true})`, "trace_sampled"},
		"bad value":       {`h:httpCall("auth", {[":method"]="GET", [":path"]="/", [":authority"]="a", ["x"]="a\r\nb: c"}, nil, 10)`, "must not contain CR, LF or NUL"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := compile(t, &luav3.Lua{DefaultSourceCode: source("function envoy_on_request(h) " + tc.code + " end")}, loopbackServices{"auth": closedAddr(t)})
			s := request("/")
			f.DecodeHeaders(s)
			if logs := strings.Join(*f.logs, "\n"); !strings.Contains(logs, tc.want) || s.Reply == nil || s.Reply.Status != 500 {
				t.Errorf("reply %+v, logs %s, want %q", s.Reply, logs, tc.want)
			}
		})
	}
}

func TestHTTPCallCutShort(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	f := compile(t, &luav3.Lua{DefaultSourceCode: source(`
function envoy_on_request(h)
  h:httpCall("auth", {[":method"]="GET", [":path"]="/", [":authority"]="a"}, nil, 0)
  h:headers():add("x-after", "1")
end`)}, loopbackServices{"auth": srv.Listener.Addr().String()})
	s := request("/")
	s.CutWait = true
	if st := f.DecodeHeaders(s); st != httpfilter.Stop {
		t.Fatalf("DecodeHeaders = %v", st)
	}
	if _, ok := s.ReqHeaders.Get("x-after"); ok || s.Reply != nil || f.errorsCount() != 0 {
		t.Errorf("reply %+v, lua.errors %d", s.Reply, f.errorsCount())
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func TestHTTPCallAsync(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer srv.Close()
	f := compile(t, &luav3.Lua{DefaultSourceCode: source(`
function envoy_on_request(h)
  local headers, body = h:httpCall("audit", {[":method"] = "POST", [":path"] = "/log", [":authority"] = "audit"}, "seen", 1000, true)
  h:headers():add("x-returned", tostring(headers == nil and body == nil))
end`)}, loopbackServices{"audit": srv.Listener.Addr().String()})
	s := request("/")
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("DecodeHeaders = %v, logs %v", st, *f.logs)
	}
	if v, _ := s.ReqHeaders.Get("x-returned"); v != "true" {
		t.Errorf("x-returned = %q: an asynchronous call returns nothing", v)
	}
	select {
	case b := <-got:
		if b != "seen" {
			t.Errorf("the service got %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Error("the asynchronous call never arrived")
	}
}

func TestHTTPCallFromResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-tag", "blue")
	}))
	defer srv.Close()
	f := compile(t, &luav3.Lua{DefaultSourceCode: source(`
function envoy_on_response(h)
  local headers = h:httpCall("tags", {[":method"] = "GET", [":path"] = "/", [":authority"] = "tags"}, nil, 0)
  h:headers():add("x-tag", headers["x-tag"])
end`)}, loopbackServices{"tags": srv.Listener.Addr().String()})
	s := response(request("/"), 200)
	// The stream's Wait is not used on the response: a cut one would
	// stop the script.
	s.CutWait = true
	f.EncodeHeaders(s)
	if got, _ := s.RespHeaders.Get("x-tag"); got != "blue" {
		t.Errorf("x-tag = %q, logs %v", got, *f.logs)
	}
}

// TestStaleHandle checks that a handle (or an object it handed out) a
// script keeps in a global is refused on a later request, as Envoy
// refuses objects used outside of their call: the request fails with 500
// and the error is logged, and the kept handle changes nothing.
func TestStaleHandle(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  if kept == nil then
    kept, kept_headers = h, h:headers()
    return
  end
  if h:headers():get("x-use") == "headers" then
    kept_headers:add("x-stale", "1")
  else
    kept:headers():add("x-stale", "1")
  end
end`)
	if st := f.DecodeHeaders(request("/")); st != httpfilter.Continue {
		t.Fatalf("first DecodeHeaders = %v", st)
	}
	for i, use := range []string{"handle", "headers"} {
		s := request("/", "x-use", use)
		if st := f.DecodeHeaders(s); st != httpfilter.Stop {
			t.Fatalf("%s: DecodeHeaders = %v", use, st)
		}
		if s.Reply == nil || s.Reply.Status != 500 {
			t.Fatalf("%s: reply = %+v", use, s.Reply)
		}
		if v, ok := s.ReqHeaders.Get("x-stale"); ok {
			t.Errorf("%s: the kept object changed the request (x-stale %q)", use, v)
		}
		if f.errorsCount() != uint64(i+1) {
			t.Errorf("%s: lua.errors = %d", use, f.errorsCount())
		}
	}
	if logs := strings.Join(*f.logs, "\n"); strings.Count(logs, "object used outside of proper scope") != 2 {
		t.Errorf("logs = %s", logs)
	}
}
