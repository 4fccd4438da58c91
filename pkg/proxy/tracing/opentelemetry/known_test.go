package opentelemetry

import (
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestKnownKeysEncodeAsKeys: a span attribute of a known key
// (tracing.Key), written from the key's table (knownKVs), has the
// bytes of the same key as any other string (appendKV), for every known
// key and values around the lengths where the table stops being used and
// where a length takes a second byte; and it decodes with the generated
// OTLP messages. Each is appended to buffers with no room left, a little
// and plenty, as the table writes a whole slot ahead.
func TestKnownKeysEncodeAsKeys(t *testing.T) {
	lengths := []int{0, 1, 2, 15, maxShortKnownValue - 1, maxShortKnownValue, maxShortKnownValue + 1,
		maxShortKV - 1, maxShortKV, 127, 128, 300}
	for k := range tracing.NumKnownKeys {
		key := tracing.Key(k)
		for _, n := range lengths {
			v := strings.Repeat("v", n)
			want := appendTags(nil, []tracing.Tag{{Key: strings.Clone(key), Value: v}})
			if n < maxShortKnownValue {
				// The table's path is the one under test.
				if got := appendKV(nil, fieldSpanAttrs, key, v); string(got) != string(want) {
					t.Fatalf("appendKV differs from appendTags for %q", key)
				}
			}
			for _, room := range []int{0, 1, 8, 31, 64, 512} {
				b := make([]byte, 3, 3+room)
				copy(b, "abc")
				got := appendTags(b, []tracing.Tag{{Key: key, Value: v}})
				if string(got[:3]) != "abc" || string(got[3:]) != string(want) {
					t.Fatalf("%q with %d bytes of value, %d of room: %x, want abc then %x", key, n, room, got, want)
				}
			}
			var s tracepb.Span
			if err := proto.Unmarshal(want, &s); err != nil {
				t.Fatalf("%q with %d bytes: %v", key, n, err)
			}
			attrs := s.GetAttributes()
			if len(attrs) != 1 || attrs[0].GetKey() != key || attrs[0].GetValue().GetStringValue() != v {
				t.Errorf("%q with %d bytes decodes as %v", key, n, attrs)
			}
		}
	}
}

// TestKnownKeysInSpans: spans whose tags have known keys, among others,
// prepared runs and long values, encode to the bytes of the same spans
// with every key another string, and decode.
func TestKnownKeysInSpans(t *testing.T) {
	plain, known := requestSpans(false), requestSpansKnown(true)
	for i, extra := range []tracing.Tag{
		{Key: tracing.Key(tracing.KeyHTTPURL), Value: strings.Repeat("u", 300)},
		{Key: tracing.Key(tracing.KeyUserAgent), Value: ""},
		{Key: "custom", Value: "c"},
	} {
		known[i].SetTag(extra.Key, extra.Value)
		plain[i].SetTag(strings.Clone(extra.Key), extra.Value)
	}
	var e encoder
	for i := range plain {
		known[i].Trace, known[i].ID = plain[i].Trace, plain[i].ID
		want := e.appendRequest(nil, requestHead{}, plain[i:i+1])
		got := e.appendRequest(nil, requestHead{}, known[i:i+1])
		if string(got) != string(want) {
			t.Errorf("span %d: known keys encode as\n%x, want\n%x", i, got, want)
		}
		if enc := encodeSpan(nil, known[i]); !strings.HasSuffix(string(got), string(enc)) {
			t.Errorf("span %d: encoded at finish as\n%x, not the end of\n%x", i, enc, got)
		}
	}
	s := tracing.NewSpan(nil, w3c{})
	s.Trace, s.ID, s.Start, s.End = tracing.NewTraceID(false), tracing.NewSpanID(), time.Unix(1, 0), time.Unix(2, 0)
	s.AddTag(tracing.Key(tracing.KeyHTTPMethod), "GET")
	size := spanSize(s)
	if b := appendSpan(nil, s, size); len(b) != 1+protowire.SizeVarint(uint64(size))+size {
		t.Errorf("a span of a known key: %d bytes written, its size announces %d", len(b), size)
	}
}

// requestSpansKnown is requestSpans with each tag of a known key
// (tracing.KnownKey) given that key's string, as a connection manager
// adds them.
func requestSpansKnown(prepared bool) []*tracing.Span {
	byName := map[string]string{}
	for k := range tracing.NumKnownKeys {
		byName[tracing.KnownKeyName(k)] = tracing.Key(k)
	}
	spans := requestSpans(prepared)
	for _, s := range spans {
		for i, t := range s.Tags {
			if key, ok := byName[t.Key]; ok {
				s.Tags[i].Key = key
			}
		}
	}
	return spans
}

// BenchmarkAppendRequestKnownKeys is BenchmarkAppendRequestPrepared with
// the known keys' strings, as a connection manager adds its tags: those
// tags are written from their keys' table.
func BenchmarkAppendRequestKnownKeys(b *testing.B) {
	benchmarkAppendRequest(b, requestSpansKnown(true))
}
