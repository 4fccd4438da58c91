package grpcjsontranscoder

import (
	"net/http"
	"testing"

	transcoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// statusStream is a test stream whose response status encoders may set.
type statusStream struct{ *httpfiltertest.Stream }

func (s statusStream) SetResponseStatus(status int) { s.Status = status }

// echoEncoder is a response encoder of pkg.Echo.Say with the print
// options given.
func echoEncoder(t *testing.T, po *transcoderv3.GrpcJsonTranscoder_PrintOptions, streaming bool) (*responseEncoder, statusStream) {
	t.Helper()
	c := config(echoSet(t, &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: "/v1/{id}"}}), "pkg.Echo")
	c.PrintOptions = po
	tc, err := compile(c)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tc.match.lookup("GET", "/v1/1")
	s := statusStream{httpfiltertest.NewStream("GET", "/v1/1")}
	s.Status = 200
	return &responseEncoder{t: tc, r: r, s: s, streaming: streaming}, s
}

// echoFrame is a gRPC frame of a Msg with id.
func echoFrame(t *testing.T, e *responseEncoder, id int64) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(e.r.method.desc.Output())
	m.Set(m.Descriptor().Fields().ByName(protoreflect.Name("id")), protoreflect.ValueOfInt64(id))
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return appendFrame(nil, b)
}

// run sends the frames through the encoder, the second cut in two, and
// returns the body.
func run(t *testing.T, e *responseEncoder, frames ...[]byte) string {
	t.Helper()
	var out []byte
	for _, f := range frames {
		for _, p := range [][]byte{f[:3], f[3:]} {
			b, err := e.EncodeData(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
	}
	b, _, err := e.EncodeEnd(http.Header{"Grpc-Status": {"0"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(append(out, b...))
}

func TestStreamFramings(t *testing.T) {
	for name, c := range map[string]struct {
		po   *transcoderv3.GrpcJsonTranscoder_PrintOptions
		want string
	}{
		"array":             {nil, `[{"id":"1"},{"id":"2"}]`},
		"newline-delimited": {&transcoderv3.GrpcJsonTranscoder_PrintOptions{StreamNewlineDelimited: true}, "{\"id\":\"1\"}\n{\"id\":\"2\"}\n"},
		"server-sent events": {&transcoderv3.GrpcJsonTranscoder_PrintOptions{StreamSseStyleDelimited: true, StreamNewlineDelimited: true},
			"data: {\"id\":\"1\"}\n\ndata: {\"id\":\"2\"}\n\n"},
	} {
		e, _ := echoEncoder(t, c.po, true)
		if got := run(t, e, echoFrame(t, e, 1), echoFrame(t, e, 2)); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
	e, _ := echoEncoder(t, &transcoderv3.GrpcJsonTranscoder_PrintOptions{StreamSseStyleDelimited: true}, true)
	if got := e.contentType(); got != "text/event-stream" {
		t.Errorf("SSE content type %q", got)
	}
}

func TestUnaryResponses(t *testing.T) {
	e, s := echoEncoder(t, &transcoderv3.GrpcJsonTranscoder_PrintOptions{AddWhitespace: true}, false)
	if got := run(t, e, echoFrame(t, e, 3)); got != "{\n  \"id\": \"3\"\n}" {
		t.Errorf("add_whitespace: %q", got)
	}
	if v, _ := s.ResponseHeaders().Get("grpc-status"); s.Status != 200 || v != "0" {
		t.Errorf("status %d, grpc-status %q", s.Status, v)
	}

	// Over max_response_body_size: a 500 in its place.
	e, s = echoEncoder(t, nil, false)
	e.t.maxResponse = 4
	if got := run(t, e, echoFrame(t, e, 3)); got != msgResponseTooLarge || s.Status != 500 {
		t.Errorf("too large: %d %q", s.Status, got)
	}

	// A message that does not parse: 502.
	e, s = echoEncoder(t, nil, false)
	if got := run(t, e, appendFrame(nil, []byte{0xff, 0xff})); s.Status != 502 || got == "" {
		t.Errorf("bad message: %d %q", s.Status, got)
	}

	// A failed call with convert_grpc_status: the status as JSON.
	e, s = echoEncoder(t, nil, false)
	e.t.convertGrpcStatus = true
	b, tr, err := e.EncodeEnd(http.Header{"Grpc-Status": {"7"}, "Grpc-Message": {"no%20way"}})
	if err != nil || tr != nil || string(b) != `{"code":7,"message":"no way"}` || s.Status != 403 {
		t.Errorf("converted status: %d %q %v %v", s.Status, b, tr, err)
	}
}

func TestResponseBufferGauge(t *testing.T) {
	st := stats.NewStore()
	g := st.Gauge("http.test.transcoder_response_buffer_bytes")
	for _, streaming := range []bool{false, true} {
		e, _ := echoEncoder(t, nil, streaming)
		e.gauge = g
		frame := echoFrame(t, e, 1)
		if _, err := e.EncodeData(frame[:3]); err != nil {
			t.Fatal(err)
		}
		if g.Value() != 3 {
			t.Fatalf("streaming %v: gauge %d while 3 bytes are held", streaming, g.Value())
		}
		if _, err := e.EncodeData(frame[3:]); err != nil {
			t.Fatal(err)
		}
		want := int64(len(frame))
		if streaming {
			want = 0 // the whole frame went out
		}
		if g.Value() != want {
			t.Fatalf("streaming %v: gauge %d, want %d", streaming, g.Value(), want)
		}
		if _, _, err := e.EncodeEnd(nil); err != nil {
			t.Fatal(err)
		}
		if g.Value() != 0 {
			t.Fatalf("streaming %v: gauge %d after the end", streaming, g.Value())
		}
	}
}
