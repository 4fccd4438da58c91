package tap

import (
	"math/rand/v2"
	"sync"
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

// reset empties the body once its bytes went out in a streamed segment.
func (b *Body) reset() { b.Data, b.Truncated = nil, false }

// Trace is one HTTP exchange as the filter captures it. The filter
// reports each part as it passes (RequestHeadersDone, RequestData,
// RequestTrailersDone, ResponseHeadersDone, ResponseData,
// ResponseTrailersDone) and Finish at
// the end. Buffered, the trace goes to the sink whole at Finish when it
// matches. Streaming, it goes out as http_streamed_trace_segment messages
// as Envoy sends them: nothing until the match is known to hold, then
// everything captured so far (the bodies as one chunk each, at most the
// buffered limit), then each part as it passes (each body chunk cut at
// the limit).
type Trace struct {
	Exchange
	RequestBody, ResponseBody *Body
	// Extras are the filter's optional records (see trace_extras.go).
	Extras Extras
	// ID is the trace_id of the segments and names file_per_tap files: a
	// random number per request, as Envoy's stream id.
	ID uint64

	cfg *Config
	// mu orders the parts: the request body may still flow while the
	// response does.
	mu      sync.Mutex
	started bool
	// rated is set once a message carried the configured sample rate:
	// a streamed trace has it on its first segment only.
	rated bool
}

// NewTrace starts a trace whose bodies keep at most the session's limits.
func (c *Config) NewTrace() *Trace {
	return &Trace{
		RequestBody:  &Body{limit: c.MaxRx},
		ResponseBody: &Body{limit: c.MaxTx},
		ID:           rand.Uint64(),
		cfg:          c,
	}
}

// RequestHeadersDone reports that RequestHeaders are set.
func (t *Trace) RequestHeadersDone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(t.requestHeaders)
}

// RequestData records a piece of the request body.
func (t *Trace) RequestData(p []byte) { t.data(true, p) }

// data records a piece of the request's body (request) or the
// response's: held in the trace until the match holds, which this piece
// may decide, then streamed as a body chunk segment.
func (t *Trace) data(request bool, p []byte) {
	if len(p) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.feed(t.cfg.bodies, request, p)
	held, limit := t.ResponseBody, t.cfg.MaxTx
	if request {
		held, limit = t.RequestBody, t.cfg.MaxRx
	}
	if !t.started {
		held.Append(p)
		t.advance(nil)
		return
	}
	seg := &datatapv3.HttpStreamedTraceSegment{}
	if chunk := t.chunk(p, limit); request {
		seg.MessagePiece = &datatapv3.HttpStreamedTraceSegment_RequestBodyChunk{RequestBodyChunk: chunk}
	} else {
		seg.MessagePiece = &datatapv3.HttpStreamedTraceSegment_ResponseBodyChunk{ResponseBodyChunk: chunk}
	}
	t.send(seg)
}

// RequestTrailersDone records the request's trailers (only when it has
// some). They are set under the trace's lock: the response may be on its
// way already, its parts looking at the match.
func (t *Trace) RequestTrailersDone(h Headers) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.RequestTrailers = h
	t.advance(t.requestTrailers)
}

// ResponseHeadersDone records the response's headers, under the trace's
// lock: the request body may still be flowing, its pieces looking at the
// match.
func (t *Trace) ResponseHeadersDone(h Headers) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ResponseHeaders = h
	t.advance(t.responseHeaders)
}

// ResponseData records a piece of the response body.
func (t *Trace) ResponseData(p []byte) { t.data(false, p) }

// ResponseTrailersDone records the response's trailers (only when it has
// some), under the trace's lock as ResponseHeadersDone.
func (t *Trace) ResponseTrailersDone(h Headers) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ResponseTrailers = h
	t.advance(t.responseTrailers)
}

// Finish ends the exchange and reports whether it was traced: a buffered
// trace that matches goes to the sink now; a streamed one was traced if
// its segments started.
func (t *Trace) Finish() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cfg.Streaming {
		return t.started
	}
	if !t.cfg.Match.Matches(&t.Exchange) {
		return false
	}
	t.cfg.Sink.Submit(t.rate(t.Wrapper(t.cfg.Format)), t.ID)
	return true
}

// advance follows a part that has just arrived: streaming and started,
// that part goes out; streaming and now matching, everything so far goes
// out, in Envoy's order.
func (t *Trace) advance(part func()) {
	switch {
	case !t.cfg.Streaming:
	case t.started:
		if part != nil {
			part()
		}
	case t.cfg.Match.Matches(&t.Exchange):
		t.started = true
		t.flush()
	}
}

// flush sends what arrived before the match held: request headers,
// request body, request trailers, response headers, response body,
// response trailers.
func (t *Trace) flush() {
	if t.RequestHeaders != nil {
		t.requestHeaders()
	}
	if b := t.body(t.RequestBody); b != nil {
		t.send(&datatapv3.HttpStreamedTraceSegment{MessagePiece: &datatapv3.HttpStreamedTraceSegment_RequestBodyChunk{RequestBodyChunk: b}})
		t.RequestBody.reset()
	}
	if t.RequestTrailers != nil {
		t.requestTrailers()
	}
	if t.ResponseHeaders != nil {
		t.responseHeaders()
	}
	if b := t.body(t.ResponseBody); b != nil {
		t.send(&datatapv3.HttpStreamedTraceSegment{MessagePiece: &datatapv3.HttpStreamedTraceSegment_ResponseBodyChunk{ResponseBodyChunk: b}})
		t.ResponseBody.reset()
	}
	if t.ResponseTrailers != nil {
		t.responseTrailers()
	}
}

func (t *Trace) requestHeaders() {
	t.send(&datatapv3.HttpStreamedTraceSegment{MessagePiece: &datatapv3.HttpStreamedTraceSegment_RequestHeaders{
		RequestHeaders: headerMap(t.RequestHeaders)}})
}

func (t *Trace) requestTrailers() {
	t.send(&datatapv3.HttpStreamedTraceSegment{MessagePiece: &datatapv3.HttpStreamedTraceSegment_RequestTrailers{
		RequestTrailers: headerMap(t.RequestTrailers)}})
}

func (t *Trace) responseHeaders() {
	t.send(&datatapv3.HttpStreamedTraceSegment{MessagePiece: &datatapv3.HttpStreamedTraceSegment_ResponseHeaders{
		ResponseHeaders: headerMap(t.ResponseHeaders)}})
}

func (t *Trace) responseTrailers() {
	t.send(&datatapv3.HttpStreamedTraceSegment{MessagePiece: &datatapv3.HttpStreamedTraceSegment_ResponseTrailers{
		ResponseTrailers: headerMap(t.ResponseTrailers)}})
}

// send submits s as a segment of this trace.
func (t *Trace) send(s *datatapv3.HttpStreamedTraceSegment) {
	s.TraceId = t.ID
	t.cfg.Sink.Submit(t.rate(&datatapv3.TraceWrapper{Trace: &datatapv3.TraceWrapper_HttpStreamedTraceSegment{HttpStreamedTraceSegment: s}}), t.ID)
}

// rate sets the configured sample rate (tap_enabled's default value) on
// the trace's first message, as Envoy records it; nothing without
// tap_enabled.
func (t *Trace) rate(w *datatapv3.TraceWrapper) *datatapv3.TraceWrapper {
	if t.cfg.SampleRate != nil && !t.rated {
		// Shared, read only: the sinks only marshal it.
		w.ConfiguredSampleRate = t.cfg.SampleRate
		t.rated = true
	}
	return w
}

// chunk is a body piece streamed on its own: cut at limit, as Envoy cuts
// each chunk.
func (t *Trace) chunk(p []byte, limit int) *datatapv3.Body {
	b := &Body{limit: limit}
	b.Append(p)
	return body(b, t.cfg.Format == tapv3.OutputSink_JSON_BODY_AS_STRING)
}

// body is b in the configured format.
func (t *Trace) body(b *Body) *datatapv3.Body {
	return body(b, t.cfg.Format == tapv3.OutputSink_JSON_BODY_AS_STRING)
}

// Wrapper renders the trace as Envoy's TraceWrapper with an
// http_buffered_trace, the bodies as_bytes or as_string per format.
func (t *Trace) Wrapper(format tapv3.OutputSink_Format) *datatapv3.TraceWrapper {
	asString := format == tapv3.OutputSink_JSON_BODY_AS_STRING
	bt := &datatapv3.HttpBufferedTrace{
		Request: &datatapv3.HttpBufferedTrace_Message{
			Headers:  headerValues(t.RequestHeaders),
			Body:     body(t.RequestBody, asString),
			Trailers: headerValues(t.RequestTrailers),
		},
		Response: &datatapv3.HttpBufferedTrace_Message{
			Headers:  headerValues(t.ResponseHeaders),
			Body:     body(t.ResponseBody, asString),
			Trailers: headerValues(t.ResponseTrailers),
		},
	}
	t.Extras.apply(bt, t.RequestHeaders != nil, t.ResponseHeaders != nil)
	return &datatapv3.TraceWrapper{Trace: &datatapv3.TraceWrapper_HttpBufferedTrace{HttpBufferedTrace: bt}}
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

func headerMap(h Headers) *corev3.HeaderMap {
	return &corev3.HeaderMap{Headers: headerValues(h)}
}
