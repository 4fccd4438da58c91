package tap

import (
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
)

// DefaultMaxBufferedBytes is max_buffered_rx_bytes and
// max_buffered_tx_bytes when unset (Envoy's 1 KiB).
const DefaultMaxBufferedBytes = 1024

// Body is a captured body, at most the configured limit of bytes.
type Body struct {
	Data      []byte
	Truncated bool
	limit     int
}

// Append records p, up to the body's limit.
func (b *Body) Append(p []byte) {
	room := b.limit - len(b.Data)
	if len(p) > room {
		p = p[:max(room, 0)]
		b.Truncated = true
	}
	b.Data = append(b.Data, p...)
}

// Trace is one HTTP exchange as the filter captured it.
type Trace struct {
	Exchange
	RequestBody, ResponseBody *Body
}

// NewTrace starts a trace whose bodies keep at most the session's limits.
func (c *Config) NewTrace() *Trace {
	return &Trace{
		RequestBody:  &Body{limit: c.MaxRx},
		ResponseBody: &Body{limit: c.MaxTx},
	}
}

// Wrapper renders the trace as Envoy's TraceWrapper with an
// http_buffered_trace, the bodies as_bytes or as_string per format.
func (t *Trace) Wrapper(format tapv3.OutputSink_Format) *datatapv3.TraceWrapper {
	asString := format == tapv3.OutputSink_JSON_BODY_AS_STRING
	return &datatapv3.TraceWrapper{Trace: &datatapv3.TraceWrapper_HttpBufferedTrace{
		HttpBufferedTrace: &datatapv3.HttpBufferedTrace{
			Request: &datatapv3.HttpBufferedTrace_Message{
				Headers: headerValues(t.RequestHeaders),
				Body:    body(t.RequestBody, asString),
			},
			Response: &datatapv3.HttpBufferedTrace_Message{
				Headers:  headerValues(t.ResponseHeaders),
				Body:     body(t.ResponseBody, asString),
				Trailers: headerValues(t.ResponseTrailers),
			},
		},
	}}
}

// body is a captured body in the trace; an empty body is left out, as
// Envoy leaves it.
func body(b *Body, asString bool) *datatapv3.Body {
	if b == nil || (len(b.Data) == 0 && !b.Truncated) {
		return nil
	}
	out := &datatapv3.Body{Truncated: b.Truncated}
	if asString && utf8.Valid(b.Data) {
		out.BodyType = &datatapv3.Body_AsString{AsString: string(b.Data)}
	} else {
		out.BodyType = &datatapv3.Body_AsBytes{AsBytes: b.Data}
	}
	return out
}

func headerValues(h Headers) []*corev3.HeaderValue {
	out := make([]*corev3.HeaderValue, 0, len(h))
	for _, f := range h {
		out = append(out, &corev3.HeaderValue{Key: f.Name, Value: f.Value})
	}
	return out
}
