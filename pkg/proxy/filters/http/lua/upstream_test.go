package lua

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// TestUpstreamReplyHeaders checks the reply of a respond() upstream:
// the connection manager lets the filter edit its head
// (httpfilter.ReplyEncoder), which gets the script's headers and runs no
// response script, as Envoy's upstream local replies carry only the
// reply's modify_headers.
func TestUpstreamReplyHeaders(t *testing.T) {
	f := inline(t, `
function envoy_on_request(h)
  h:respond({[":status"] = "403", ["x-denied-by"] = "lua"}, "no")
end
function envoy_on_response(h)
  h:headers():add("x-response-script", "ran")
end`)
	s := request("/x")
	if st := f.DecodeHeaders(s); st != httpfilter.Stop || s.Reply == nil || s.Reply.Status != 403 {
		t.Fatalf("status %v reply %+v, want Stop and a 403", st, s.Reply)
	}
	response(s, 403, "content-type", "text/plain")
	var re httpfilter.ReplyEncoder = f.of(s)
	re.EncodeReplyHeaders(s)
	if v, _ := s.RespHeaders.Get("x-denied-by"); v != "lua" {
		t.Errorf("x-denied-by %q, want the script's header", v)
	}
	if _, ok := s.RespHeaders.Get("x-response-script"); ok {
		t.Error("the response script ran on the upstream reply")
	}
	if _, ok := s.RespHeaders.Get("content-type"); ok {
		t.Error("content-type text/plain kept, want it dropped as respond() sends none")
	}
	f.of(s).OnDestroy()
}
