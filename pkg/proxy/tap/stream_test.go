package tap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// recordSink keeps what a trace submits.
type recordSink struct {
	got []*datatapv3.TraceWrapper
	ids []uint64
}

func (r *recordSink) Submit(w *datatapv3.TraceWrapper, id uint64) {
	r.got = append(r.got, w)
	r.ids = append(r.ids, id)
}

// pieces names each streamed segment's part, with its body for chunks.
func (r *recordSink) pieces(t *testing.T, id uint64) []string {
	t.Helper()
	var out []string
	for i, w := range r.got {
		s := w.GetHttpStreamedTraceSegment()
		if s == nil {
			t.Fatalf("submission %d is not a streamed segment: %v", i, w)
		}
		if s.GetTraceId() != id || r.ids[i] != id {
			t.Errorf("segment %d has trace id %d (submitted as %d), want %d", i, s.GetTraceId(), r.ids[i], id)
		}
		switch {
		case s.GetRequestHeaders() != nil:
			out = append(out, "request_headers")
		case s.GetRequestBodyChunk() != nil:
			out = append(out, "request_body:"+chunkText(s.GetRequestBodyChunk()))
		case s.GetRequestTrailers() != nil:
			out = append(out, "request_trailers")
		case s.GetResponseHeaders() != nil:
			out = append(out, "response_headers")
		case s.GetResponseBodyChunk() != nil:
			out = append(out, "response_body:"+chunkText(s.GetResponseBodyChunk()))
		case s.GetResponseTrailers() != nil:
			out = append(out, "response_trailers")
		}
	}
	return out
}

func chunkText(b *datatapv3.Body) string {
	s := b.GetAsString()
	if s == "" {
		s = string(b.GetAsBytes())
	}
	if b.GetTruncated() {
		s += "+"
	}
	return s
}

func streamingConfig(t *testing.T, pred string, sink Sink) *Config {
	t.Helper()
	m, err := CompileMatch(predicate(t, pred), "match")
	if err != nil {
		t.Fatal(err)
	}
	return &Config{Match: m, MaxRx: 4, MaxTx: 3, Streaming: true, Sink: sink, Format: tapv3.OutputSink_JSON_BODY_AS_STRING,
		bodies: m.bodyMatchers(nil)}
}

// exchange drives tr through a whole request and response.
func exchange(tr *Trace, status string) {
	tr.RequestHeaders = Headers{{":path", "/"}}
	tr.RequestHeadersDone()
	tr.RequestData([]byte("abcdef"))
	tr.RequestData([]byte("gh"))
	tr.ResponseHeadersDone(Headers{{":status", status}})
	tr.ResponseData([]byte("12"))
	tr.ResponseData([]byte("3456"))
	tr.ResponseTrailersDone(Headers{{"grpc-status", "0"}})
}

func TestStreamedSegments(t *testing.T) {
	cases := map[string]struct {
		pred, status string
		want         []string
	}{
		// Matched from the request headers: every part is a segment, each
		// body chunk cut at the limit.
		"from the start": {`any_match: true`, "200", []string{"request_headers", "request_body:abcd+", "request_body:gh",
			"response_headers", "response_body:12", "response_body:345+", "response_trailers"}},
		// Matched at the response headers: what came before is flushed, the
		// request body as one chunk of at most max_buffered_rx_bytes.
		"at the response": {`http_response_headers_match: {headers: [{name: ":status", string_match: {exact: "503"}}]}`, "503",
			[]string{"request_headers", "request_body:abcd+", "response_headers", "response_body:12", "response_body:345+", "response_trailers"}},
		"at the trailers": {`http_response_trailers_match: {headers: [{name: grpc-status, string_match: {exact: "0"}}]}`, "200",
			[]string{"request_headers", "request_body:abcd+", "response_headers", "response_body:123+", "response_trailers"}},
		// Matched by the request body's second piece: the held parts go
		// out, that piece included.
		"at a body": {`http_request_generic_body_match: {patterns: [{string_match: fg}, {binary_match: "aA=="}]}`, "200",
			[]string{"request_headers", "request_body:abcd+", "response_headers", "response_body:12", "response_body:345+", "response_trailers"}},
		"never": {`http_response_headers_match: {headers: [{name: ":status", string_match: {exact: "503"}}]}`, "200", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sink := &recordSink{}
			tr := streamingConfig(t, tc.pred, sink).NewTrace()
			exchange(tr, tc.status)
			if traced := tr.Finish(); traced != (tc.want != nil) {
				t.Errorf("Finish = %v", traced)
			}
			if got := sink.pieces(t, tr.ID); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("segments\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestRequestTrailers: request trailers are traced, after the request
// body, and a request trailer matcher starts a streamed trace when they
// arrive, as Envoy's onRequestTrailers.
func TestRequestTrailers(t *testing.T) {
	const pred = `http_request_trailers_match: {headers: [{name: x-checksum, string_match: {exact: abc}}]}`
	drive := func(tr *Trace, checksum string) {
		tr.RequestHeaders = Headers{{":path", "/"}}
		tr.RequestHeadersDone()
		tr.RequestData([]byte("abcdef"))
		tr.RequestTrailersDone(Headers{{"x-checksum", checksum}})
		tr.ResponseHeadersDone(Headers{{":status", "200"}})
		tr.ResponseData([]byte("12"))
	}
	sink := &recordSink{}
	tr := streamingConfig(t, pred, sink).NewTrace()
	drive(tr, "abc")
	if !tr.Finish() {
		t.Error("not traced")
	}
	want := "request_headers request_body:abcd+ request_trailers response_headers response_body:12"
	if got := strings.Join(sink.pieces(t, tr.ID), " "); got != want {
		t.Errorf("segments\n got %s\nwant %s", got, want)
	}
	if got := sink.got[2].GetHttpStreamedTraceSegment().GetRequestTrailers().GetHeaders(); len(got) != 1 || got[0].GetKey() != "x-checksum" {
		t.Errorf("request trailers segment %v", got)
	}

	sink = &recordSink{}
	tr = streamingConfig(t, pred, sink).NewTrace()
	drive(tr, "other")
	if tr.Finish() || len(sink.got) != 0 {
		t.Errorf("a request whose trailer does not match was traced: %d segments", len(sink.got))
	}

	// Buffered: the trace carries them in request.trailers.
	c := streamingConfig(t, pred, sink)
	c.Streaming = false
	tr = c.NewTrace()
	drive(tr, "abc")
	if !tr.Finish() {
		t.Fatal("buffered: not traced")
	}
	bt := sink.got[len(sink.got)-1].GetHttpBufferedTrace()
	if got := bt.GetRequest().GetTrailers(); len(got) != 1 || got[0].GetValue() != "abc" || len(bt.GetResponse().GetTrailers()) != 0 {
		t.Errorf("buffered trace trailers: request %v, response %v", got, bt.GetResponse().GetTrailers())
	}
}

func TestNotMatchBeforeResponse(t *testing.T) {
	// A header matcher does not match before its headers arrive, so its
	// negation holds from the request headers on, as in Envoy.
	sink := &recordSink{}
	tr := streamingConfig(t, `not_match: {http_response_headers_match: {headers: [{name: ":status", string_match: {exact: "200"}}]}}`, sink).NewTrace()
	exchange(tr, "200")
	if !tr.Finish() || len(sink.got) != 7 {
		t.Errorf("traced %d segments, want all 7", len(sink.got))
	}
}

func TestFileSinkFormats(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []tapv3.OutputSink_Format{tapv3.OutputSink_PROTO_BINARY_LENGTH_DELIMITED, tapv3.OutputSink_JSON_BODY_AS_BYTES} {
		prefix := filepath.Join(dir, f.String())
		c := streamingConfig(t, `any_match: true`, newFileSink(prefix, f))
		c.Format = f
		tr := c.NewTrace()
		exchange(tr, "200")
		tr.Finish()
		files, _ := filepath.Glob(prefix + "_*")
		if len(files) != 1 {
			t.Fatalf("%s: files %v, want one", f, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		switch f {
		case tapv3.OutputSink_JSON_BODY_AS_BYTES:
			if !strings.HasSuffix(files[0], ".json") || strings.Count(string(b), `"http_streamed_trace_segment"`) != 7 ||
				!strings.Contains(string(b), `"as_bytes": "YWJjZA=="`) {
				t.Errorf("JSON file %s:\n%s", files[0], b)
			}
		default:
			if !strings.HasSuffix(files[0], ".pb_length_delimited") {
				t.Errorf("file name %s", files[0])
			}
			n := 0
			for len(b) > 0 {
				size, k := protowire.ConsumeVarint(b)
				if k < 0 || uint64(len(b)-k) < size {
					t.Fatalf("bad length prefix after %d messages", n)
				}
				var w datatapv3.TraceWrapper
				if err := proto.Unmarshal(b[k:k+int(size)], &w); err != nil || w.GetHttpStreamedTraceSegment().GetTraceId() != tr.ID {
					t.Fatalf("message %d: %v %v", n, err, &w)
				}
				b = b[k+int(size):]
				n++
			}
			if n != 7 {
				t.Errorf("%d messages, want 7", n)
			}
		}
	}
}

func TestFileSinkProtoText(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "t")
	c := streamingConfig(t, `any_match: true`, newFileSink(prefix, tapv3.OutputSink_PROTO_TEXT))
	c.Streaming, c.Format = false, tapv3.OutputSink_PROTO_TEXT
	tr := c.NewTrace()
	exchange(tr, "200")
	if !tr.Finish() {
		t.Fatal("not traced")
	}
	b, err := os.ReadFile(fmt.Sprintf("%s_%d.pb_text", prefix, tr.ID))
	if err != nil {
		t.Fatal(err)
	}
	var w datatapv3.TraceWrapper
	if err := prototext.Unmarshal(b, &w); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if got := w.GetHttpBufferedTrace().GetRequest().GetBody().GetAsBytes(); string(got) != "abcd" {
		t.Errorf("request body %q in\n%s", got, b)
	}
}
