package tap

import (
	"strings"
	"testing"

	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"

	"github.com/outrigger-dev/outrigger/pkg/admin"
)

func TestTraceJSON(t *testing.T) {
	c := &Config{MaxRx: 4, MaxTx: 1024}
	tr := c.NewTrace()
	tr.RequestHeaders = Headers{{":method", "POST"}}
	tr.RequestBody.Append([]byte("hel"))
	tr.RequestBody.Append([]byte("lo"))
	tr.ResponseHeaders = Headers{{":status", "200"}}
	tr.ResponseTrailers = Headers{{"grpc-status", "0"}}

	b, err := admin.MarshalProto(tr.Wrapper(tapv3.OutputSink_JSON_BODY_AS_BYTES), true)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		`"http_buffered_trace": {`,
		`"key": ":method",`,
		`"as_bytes": "aGVsbA=="`, // "hell": max_buffered_rx_bytes 4
		`"truncated": true`,
		`"trailers": [`,
		`"value": "0"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("trace lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"response": {
   "headers": [
    {
     "key": ":status",
     "value": "200"
    }
   ],
   "body"`) {
		t.Errorf("an empty response body was printed:\n%s", got)
	}

	b, err = admin.MarshalProto(tr.Wrapper(tapv3.OutputSink_JSON_BODY_AS_STRING), true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"as_string": "hell"`) {
		t.Errorf("as_string body missing:\n%s", b)
	}
}

func TestBodyAppendBounded(t *testing.T) {
	b := &Body{limit: 3}
	b.Append([]byte("abcdef"))
	b.Append([]byte("gh"))
	if string(b.Data) != "abc" || !b.Truncated {
		t.Errorf("body %q truncated=%v, want abc, true", b.Data, b.Truncated)
	}
}
