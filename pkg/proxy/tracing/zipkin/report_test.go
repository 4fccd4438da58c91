package zipkin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// jsonSpan is the span of the previous encoding, by encoding/json: the
// reference appendSpans is checked against.
type jsonSpan struct {
	TraceID       string `json:"traceId"`
	ParentID      string `json:"parentId,omitempty"`
	ID            string `json:"id"`
	Kind          string `json:"kind"`
	Name          string `json:"name"`
	Timestamp     int64  `json:"timestamp"`
	Duration      int64  `json:"duration"`
	LocalEndpoint struct {
		ServiceName string `json:"serviceName"`
	} `json:"localEndpoint"`
	Annotations []struct {
		Timestamp int64  `json:"timestamp"`
		Value     string `json:"value"`
	} `json:"annotations,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
	Shared bool              `json:"shared,omitempty"`
}

// referenceJSON encodes spans as the exporter did with encoding/json.
func referenceJSON(t *testing.T, service string, spans []*tracing.Span) []byte {
	out := make([]jsonSpan, len(spans))
	for i, s := range spans {
		js := &out[i]
		js.TraceID, js.ID, js.Kind, js.Name = traceIDHex(s.Trace), s.ID.Hex(), "SERVER", s.Name
		js.Timestamp, js.Duration = s.Start.UnixMicro(), s.End.Sub(s.Start).Microseconds()
		js.LocalEndpoint.ServiceName, js.Shared = service, s.Shared
		if s.Kind == tracing.Client {
			js.Kind = "CLIENT"
		}
		if !s.Parent.IsZero() {
			js.ParentID = s.Parent.Hex()
		}
		for _, l := range s.Logs {
			js.Annotations = append(js.Annotations, struct {
				Timestamp int64  `json:"timestamp"`
				Value     string `json:"value"`
			}{l.Time.UnixMicro(), l.Event})
		}
		if len(s.Tags) > 0 {
			js.Tags = map[string]string{}
			for _, tg := range s.Tags {
				js.Tags[tg.Key] = tg.Value
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode reads a JSON document with numbers kept exact.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return v
}

// TestAppendSpansMatchesEncodingJSON compares the encoder with the
// previous encoding, value for value, on spans with every field the proxy
// sets: 64- and 128-bit trace ids, with and without a parent, both kinds,
// logs, tags with characters JSON escapes, shared contexts, and none of
// the optional fields.
func TestAppendSpansMatchesEncodingJSON(t *testing.T) {
	start := time.Unix(1700000000, 123456789)
	root := tracing.NewSpan(nil, nil)
	root.Trace, root.ID, root.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "ingress"
	root.Start, root.End = start, start.Add(1234567*time.Nanosecond)
	for _, kv := range [][2]string{
		{"http.url", "http://h:1/p?q=<a>&b=\"c\"\\"}, {"node_id", "node\n\t\r\x01\x1f"},
		{"utf8", "é漢字\u2028\u2029"}, {"invalid", "a\xffb\xc3"}, {"", "skipped"}, {"empty", ""},
		{"guid:x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"}, {"error", "true"},
	} {
		root.SetTag(kv[0], kv[1])
	}
	root.Log(start.Add(time.Millisecond), "first_upstream_rx_byte_received")
	root.Log(start.Add(2*time.Millisecond), "last_downstream_tx_byte_sent")
	child := root.Child("router up egress", start.Add(time.Microsecond))
	child.End = start.Add(time.Second)
	child.SetTag("upstream_cluster", "up")
	short := tracing.NewSpan(nil, nil)
	short.Trace, short.ID, short.Parent = tracing.NewTraceID(true), tracing.NewSpanID(), tracing.NewSpanID()
	short.Shared, short.Name = true, "h\"ost"
	short.Start, short.End = start, start
	bare := tracing.NewSpan(nil, nil)
	bare.Trace, bare.ID = tracing.NewTraceID(false), tracing.NewSpanID()

	for _, spans := range [][]*tracing.Span{{root, child, short, bare}, {bare}, {}} {
		got := appendSpans(nil, "front <proxy>", spans)
		want := referenceJSON(t, "front <proxy>", spans)
		if !reflect.DeepEqual(decode(t, got), decode(t, want)) {
			t.Errorf("encoded\n%s\nwant (encoding/json)\n%s", got, want)
		}
	}
	// Every escape encoding/json makes, byte for byte (its map sorts the
	// keys: one tag keeps the order out of it).
	one := tracing.NewSpan(nil, nil)
	one.Trace, one.ID = tracing.NewTraceID(false), tracing.NewSpanID()
	one.SetTag("k", "<>&\"\\\n\r\t\x00\x1fé\u2028\u2029\xff")
	if got, want := appendSpans(nil, "s", []*tracing.Span{one}), referenceJSON(t, "s", []*tracing.Span{one}); !bytes.Equal(got, want) {
		t.Errorf("escapes:\n%s\nwant\n%s", got, want)
	}
	if got := string(appendSpans(nil, "s", []*tracing.Span{short})); !strings.Contains(got, `"shared":true`) || strings.Contains(got, `"tags"`) {
		t.Errorf("shared span without tags = %s", got)
	}
}

// BenchmarkAppendSpans encodes a batch of five spans with the tags of a
// proxied request.
func BenchmarkAppendSpans(b *testing.B) {
	spans := make([]*tracing.Span, 5)
	for i := range spans {
		s := tracing.NewSpan(nil, nil)
		s.Trace, s.ID, s.Name = tracing.NewTraceID(false), tracing.NewSpanID(), "127.0.0.1:10000"
		s.Start, s.End = time.Unix(10, 5), time.Unix(11, 7)
		for _, kv := range [][2]string{
			{"node_id", "node-1"}, {"zone", "zone-a"}, {"guid:x-request-id", "8f0e4a36-2c4d-4b5e-9a1f-3d2c1b0a9f8e"},
			{"http.url", "http://127.0.0.1:10000/"}, {"http.method", "GET"}, {"downstream_cluster", "-"},
			{"user_agent", "wrk"}, {"http.protocol", "HTTP/1.1"}, {"peer.address", "127.0.0.1"},
			{"request_size", "0"}, {"response_size", "128"}, {"component", "proxy"},
			{"upstream_cluster", "up"}, {"upstream_cluster.name", "up"}, {"http.status_code", "200"},
			{"response_flags", "-"},
		} {
			s.SetTag(kv[0], kv[1])
		}
		spans[i] = s
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = appendSpans(buf[:0], "edge", spans)
	}
}
