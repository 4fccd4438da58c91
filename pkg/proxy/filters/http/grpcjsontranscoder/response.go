package grpcjsontranscoder

import (
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The messages of Envoy's local replies for responses it cannot
// transcode.
const (
	msgResponseTooLarge = "Response not transcoded because the transcoder's internal buffer size exceeds the configured limit."
	msgRequestTooLarge  = "Request rejected because the transcoder's internal buffer size exceeds the configured limit."
)

// errResponseTranscode cuts a streamed response that cannot be
// transcoded once its head has left.
var errResponseTranscode = errors.New("grpc_json_transcoder: response not transcoded")

// responseEncoder turns the gRPC response body into JSON: for a unary
// method it holds the head until the trailers, which give the status; a
// server-streaming method's messages go out as they come, as one JSON
// array, newline-delimited or as server-sent events.
type responseEncoder struct {
	t *transcoder
	r *rule
	s httpfilter.Stream
	// streaming: the method streams its responses.
	streaming bool
	// pending holds the bytes of frames not yet whole.
	pending []byte
	out     []byte
	// sent counts the streamed messages; hasData records that the body
	// had any bytes (convert_grpc_status converts only without one).
	sent    int
	hasData bool
	// headSet: a streamed HttpBody's content type has been set.
	headSet bool
	// failed: the response was replaced by an error reply, whose body
	// is failBody.
	failed   bool
	failBody string
	// gauge counts the bytes held in pending
	// (transcoder_response_buffer_bytes), counted is what this response
	// added to it.
	gauge   *stats.Gauge
	counted int64
}

// account brings the gauge in line with what pending holds.
func (e *responseEncoder) account() {
	n := int64(len(e.pending))
	addGauge(e.gauge, n-e.counted)
	e.counted = n
}

// release takes what the response still counts off the gauge.
func (e *responseEncoder) release() {
	addGauge(e.gauge, -e.counted)
	e.counted = 0
}

var _ httpfilter.HeadHolder = (*responseEncoder)(nil)

// HoldsHead implements httpfilter.HeadHolder: a unary response's head
// waits for its status, a streamed HttpBody's for its content type.
func (e *responseEncoder) HoldsHead() bool {
	return !e.streaming || e.r.responseIsHTTPBody()
}

// responseIsHTTPBody reports a response (or response_body field) of type
// google.api.HttpBody.
func (r *rule) responseIsHTTPBody() bool {
	return r.responsePath != nil || r.method.desc.Output().FullName() == httpBodyName
}

// EncodeData implements httpfilter.DataEncoder.
func (e *responseEncoder) EncodeData(p []byte) ([]byte, error) {
	if e.failed {
		return nil, nil
	}
	if len(p) > 0 {
		e.hasData = true
	}
	e.pending = append(e.pending, p...)
	defer e.account()
	if !e.streaming {
		if len(e.pending) > e.t.maxResponse {
			e.fail(http.StatusInternalServerError, msgResponseTooLarge)
		}
		return nil, nil
	}
	e.out = e.out[:0]
	if err := e.drain(); err != nil {
		return nil, err
	}
	if len(e.pending) > e.t.maxResponse {
		return nil, errResponseTranscode
	}
	return e.out, nil
}

// drain transcodes the whole frames of pending into out.
func (e *responseEncoder) drain() error {
	for {
		msg, rest, ok, err := nextFrame(e.pending)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := e.appendMessage(msg); err != nil {
			return err
		}
		e.pending = append(e.pending[:0], rest...)
	}
}

// nextFrame splits the first whole gRPC frame off b; ok is false when b
// holds none yet. A compressed frame is an error: the filter does not
// advertise an encoding upstream.
func nextFrame(b []byte) (msg, rest []byte, ok bool, err error) {
	if len(b) < 5 {
		return nil, b, false, nil
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if uint64(len(b)-5) < uint64(n) {
		return nil, b, false, nil
	}
	if b[0]&1 != 0 {
		return nil, nil, false, errors.New("compressed gRPC message")
	}
	return b[5 : 5+n], b[5+n:], true, nil
}

// appendMessage transcodes one streamed message into out.
func (e *responseEncoder) appendMessage(raw []byte) error {
	body, ct, err := e.messageBody(raw)
	if err != nil {
		return err
	}
	if ct != "" || e.r.responseIsHTTPBody() {
		if !e.headSet {
			e.headSet = true
			e.s.ResponseHeaders().Set("content-type", ct)
		}
		e.out = append(e.out, body...)
		return nil
	}
	switch {
	case e.t.sse:
		e.out = append(e.out, "data: "...)
		e.out = append(e.out, body...)
		e.out = append(e.out, "\n\n"...)
	case e.t.newlineDelimited:
		e.out = append(e.out, body...)
		e.out = append(e.out, '\n')
	default:
		if e.sent == 0 {
			e.out = append(e.out, '[')
		} else {
			e.out = append(e.out, ',')
		}
		e.out = append(e.out, body...)
	}
	e.sent++
	return nil
}

// messageBody transcodes a response message: its JSON, or for an
// HttpBody its data and content type.
func (e *responseEncoder) messageBody(raw []byte) (body []byte, contentType string, err error) {
	m := dynamicpb.NewMessage(e.r.method.desc.Output())
	if err := (proto.UnmarshalOptions{Resolver: e.t.types}).Unmarshal(raw, m); err != nil {
		return nil, "", err
	}
	var pm protoreflect.Message = m
	for _, fd := range e.r.responsePath {
		pm = pm.Get(fd).Message()
	}
	if pm.Descriptor().FullName() == httpBodyName {
		fields := pm.Descriptor().Fields()
		return pm.Get(fields.ByName("data")).Bytes(), pm.Get(fields.ByName("content_type")).String(), nil
	}
	b, err := e.t.print.Marshal(pm.Interface())
	if err != nil {
		return nil, "", err
	}
	return e.t.format(b), "", nil
}

// EncodeEnd implements httpfilter.DataEncoder.
func (e *responseEncoder) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	defer e.release()
	if e.failed {
		return []byte(e.failBody), nil, nil
	}
	if e.streaming {
		return e.endStream(trailers)
	}
	return e.endUnary(trailers)
}

// endStream ends a streamed response: the frames left, the array's
// close, and the trailers as they came.
func (e *responseEncoder) endStream(trailers http.Header) ([]byte, http.Header, error) {
	e.out = e.out[:0]
	if err := e.drain(); err != nil {
		return nil, nil, err
	}
	if !e.t.sse && !e.t.newlineDelimited && !e.r.responseIsHTTPBody() {
		if e.sent == 0 {
			e.out = append(e.out, "[]"...)
		} else {
			e.out = append(e.out, ']')
		}
	}
	return e.out, trailers, nil
}

// endUnary ends a unary response: its status from the trailers, which
// move into the head (grpc-status, grpc-message), and its one message as
// the body, or the status as JSON (convert_grpc_status) when it has
// none.
func (e *responseEncoder) endUnary(trailers http.Header) ([]byte, http.Header, error) {
	h := e.s.ResponseHeaders()
	gsRaw, hasGs := trailerValue(trailers, "grpc-status")
	code, valid := parseGrpcStatus(gsRaw, hasGs)
	msg, hasMsg := trailerValue(trailers, "grpc-message")
	if valid && code != 0 && e.t.convertGrpcStatus && !e.hasData {
		details, hasDetails := trailerValue(trailers, "grpc-status-details-bin")
		if js, ok := e.t.statusJSON(code, msg, hasMsg, details, hasDetails); ok {
			e.setStatus(grpcToHTTP(code))
			h.Set("content-type", "application/json")
			h.Del("trailer")
			return js, nil, nil
		}
	}
	var body []byte
	if len(e.pending) > 0 {
		raw, rest, ok, err := nextFrame(e.pending)
		if err == nil && (!ok || len(rest) != 0) {
			err = errors.New("unexpected end of the response message")
		}
		if err == nil {
			var ct string
			body, ct, err = e.messageBody(raw)
			if err == nil && (ct != "" || e.r.responseIsHTTPBody()) {
				h.Set("content-type", ct)
			}
		}
		if err != nil {
			e.fail(http.StatusBadGateway, err.Error())
			return []byte(e.failBody), nil, nil
		}
	}
	if !valid {
		e.setStatus(http.StatusServiceUnavailable)
	} else {
		e.setStatus(grpcToHTTP(code))
		h.Set("grpc-status", strconv.Itoa(code))
	}
	if hasMsg {
		h.Set("grpc-message", msg)
	}
	h.Del("trailer")
	return body, nil, nil
}

// trailerValue is a trailer's first value.
func trailerValue(t http.Header, name string) (string, bool) {
	vs := t.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// setStatus sets the held response's status.
func (e *responseEncoder) setStatus(status int) {
	if ss, ok := e.s.(httpfilter.ResponseStatusSetter); ok {
		ss.SetResponseStatus(status)
	}
}

// fail answers in place of the held response, as Envoy's local reply
// from the encoder: status and a text body.
func (e *responseEncoder) fail(status int, message string) {
	e.failed = true
	e.pending = nil
	e.setStatus(status)
	h := e.s.ResponseHeaders()
	clearHeaders(h)
	h.Set("content-type", "text/plain")
	e.failBody = message
}

// rangeHeaders is a header editor whose fields can be listed.
type rangeHeaders interface {
	Range(fn func(name, value string) bool)
}

// clearHeaders removes every header field of h.
func clearHeaders(h router.HeaderEditor) {
	rh, ok := h.(rangeHeaders)
	if !ok {
		return
	}
	var names []string
	rh.Range(func(name, _ string) bool {
		names = append(names, name)
		return true
	})
	for _, n := range names {
		h.Del(n)
	}
}
