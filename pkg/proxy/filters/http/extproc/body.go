package extproc

import (
	"net/http"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// bodyMessage is a body chunk for phase p.
func bodyMessage(p []byte, end bool, ph phase) *extprocsvc.ProcessingRequest {
	b := &extprocsvc.HttpBody{Body: p, EndOfStream: end}
	if ph == phaseRequestBody {
		return &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestBody{RequestBody: b}}
	}
	return &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_ResponseBody{ResponseBody: b}}
}

// bodyAnswer is the CommonResponse of a body answer.
func bodyAnswer(r *extprocsvc.ProcessingResponse, ph phase) *extprocsvc.CommonResponse {
	if ph == phaseRequestBody {
		return r.GetRequestBody().GetResponse()
	}
	return r.GetResponseBody().GetResponse()
}

// streamChunk sends one piece of a streamed body (STREAMED) and returns
// what goes on in its place. The head has left: the answer's header
// mutations no longer apply, as in Envoy. A reply the processor (or a
// failure) asks for answers the request when nothing was sent back yet
// (a request body's httpfilter.BodyError), and otherwise cuts the
// response.
func (f *filter) streamChunk(p []byte, end bool, ph phase) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return p, nil
	}
	r, rep := f.call(bodyMessage(p, end, ph))
	if rep == nil {
		var ok bool
		if ok, rep = f.answer(r, ph); ok {
			out, _ := replaceBody(bodyAnswer(r, ph).GetBodyMutation(), p)
			return out, nil
		}
	}
	if rep == nil {
		return p, nil
	}
	if ph == phaseRequestBody {
		f.replyHeaders, f.replied = rep.headers, true
		return nil, &httpfilter.BodyError{Status: rep.status, Body: rep.body, Details: rep.details}
	}
	return nil, errReset
}

// streamDecoder sends the request body to the processor piece by piece
// (STREAMED). With send_body_without_waiting_for_header_response, the
// body's first skip bytes were sent already (f.early): their answers
// are read instead, once, as the body reaches the decoder.
type streamDecoder struct {
	f    *filter
	skip int
	// drained: the early pieces' answers were read; endSent: the
	// body's end was among those pieces.
	drained, endSent bool
}

// drain reads the early pieces' answers, the first time.
func (d *streamDecoder) drain() ([]byte, error) {
	if d.drained {
		return nil, nil
	}
	d.drained = true
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.early == nil {
		return nil, nil
	}
	out, endSent, err := f.earlyAnswers()
	d.endSent = endSent
	return out, err
}

// DecodeData implements httpfilter.DataDecoder.
func (d *streamDecoder) DecodeData(p []byte) ([]byte, error) {
	if d.drained && d.skip == 0 {
		return d.f.streamChunk(p, false, phaseRequestBody)
	}
	out, err := d.drain()
	if err != nil {
		return nil, err
	}
	k := min(d.skip, len(p))
	d.skip -= k
	if p = p[k:]; len(p) == 0 {
		return out, nil
	}
	more, err := d.f.streamChunk(p, false, phaseRequestBody)
	if err != nil || len(out) == 0 {
		return more, err
	}
	return append(out, more...), nil
}

// DecodeEnd implements httpfilter.DataDecoder: the body's end, an empty
// chunk with end_of_stream, unless it went early.
func (d *streamDecoder) DecodeEnd() ([]byte, error) {
	out, err := d.drain()
	if err != nil || d.endSent {
		return out, err
	}
	more, err := d.f.streamChunk(nil, true, phaseRequestBody)
	if err != nil || len(out) == 0 {
		return more, err
	}
	return append(out, more...), nil
}

var _ httpfilter.CheckedTrailerDecoder = (*streamDecoder)(nil)

// DecodeTrailers implements httpfilter.TrailerDecoder (the connection
// manager calls DecodeTrailersChecked).
func (d *streamDecoder) DecodeTrailers(t http.Header) http.Header {
	t, _ = d.DecodeTrailersChecked(t)
	return t
}

// DecodeTrailersChecked implements httpfilter.CheckedTrailerDecoder: the
// trailers follow the body's pieces.
func (d *streamDecoder) DecodeTrailersChecked(t http.Header) (http.Header, error) {
	return d.f.requestTrailers(t)
}

// bufferEncoder holds the response head and body until the body has
// ended (BUFFERED), or reached the buffer limit (BUFFERED_PARTIAL), then
// sends the body to the processor, whose answer may still change the
// head.
type bufferEncoder struct {
	f       *filter
	partial bool
	buf     []byte
	// passed: the buffered part was processed; the rest passes.
	passed bool
	// replaced: the response was replaced by a reply; the upstream's
	// rest is dropped.
	replaced bool
}

var _ httpfilter.HeadHolder = (*bufferEncoder)(nil)

// HoldsHead implements httpfilter.HeadHolder.
func (e *bufferEncoder) HoldsHead() bool { return true }

// EncodeData implements httpfilter.DataEncoder.
func (e *bufferEncoder) EncodeData(p []byte) ([]byte, error) {
	switch {
	case e.replaced:
		return nil, nil
	case e.passed:
		return p, nil
	}
	e.buf = append(e.buf, p...)
	if e.partial && len(e.buf) >= bodyLimit {
		e.passed = true
		return e.process(false), nil
	}
	if len(e.buf) > bodyLimit {
		// Over Envoy's buffer limit: Envoy answers 500.
		e.f.mu.Lock()
		e.f.finish(true)
		e.f.mu.Unlock()
		e.replaced = true
		e.f.replaceResponse(e.f.s, errorReply(500, "response_payload_too_large"), false)
		e.buf = nil
		return []byte(nil), nil
	}
	return nil, nil
}

// EncodeEnd implements httpfilter.DataEncoder.
func (e *bufferEncoder) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if e.replaced {
		return nil, nil, nil
	}
	var out []byte
	if !e.passed {
		e.passed = true
		out = e.process(len(trailers) == 0)
		if e.replaced {
			return out, nil, nil
		}
	}
	if err := e.f.responseTrailers(trailers); err != nil {
		return nil, nil, err
	}
	return out, trailers, nil
}

// process sends the buffered body, with end_of_stream when it is the
// whole body, and returns what goes on in its place: the mutated body,
// or a reply's body.
func (e *bufferEncoder) process(end bool) []byte {
	f := e.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return e.buf
	}
	s := f.s
	r, rep := f.call(bodyMessage(e.buf, end, phaseResponseBody))
	if rep == nil {
		var ok bool
		if ok, rep = f.answer(r, phaseResponseBody); ok {
			f.receiveMetadata(s, r)
			cr := r.GetResponseBody().GetResponse()
			if hm := cr.GetHeaderMutation(); hm != nil {
				if err := applyHeaderMutation(hm, head{h: s.ResponseHeaders(), s: s, response: true, cl: f.clFor(true)}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
					rep = f.mutationFailed(err)
				}
			}
			if rep == nil {
				out, _ := replaceBody(cr.GetBodyMutation(), e.buf)
				// The head is held: a length the processor set counts.
				f.declareResponseLength(s, -1)
				return out
			}
		}
	}
	if rep == nil {
		return e.buf
	}
	e.replaced = true
	f.replaceResponse(s, rep, false)
	return []byte(rep.body)
}

// trailerEncoder passes the response body and sends its trailers
// (response_trailer_mode SEND without a body mode).
type trailerEncoder struct {
	f *filter
}

// EncodeData implements httpfilter.DataEncoder.
func (e *trailerEncoder) EncodeData(p []byte) ([]byte, error) { return p, nil }

// EncodeEnd implements httpfilter.DataEncoder.
func (e *trailerEncoder) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if err := e.f.responseTrailers(trailers); err != nil {
		return nil, nil, err
	}
	return nil, trailers, nil
}

// responseTrailers sends the response trailers, when the mode says so and
// there are some, and applies the answer's mutations to them. A reply
// then cuts the response: its head has left.
func (f *filter) responseTrailers(trailers http.Header) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.mode.responseTrailers {
		return nil
	}
	if rep := f.exchangeTrailers(trailers, phaseResponseTrailers); rep != nil {
		return errReset
	}
	return nil
}

// exchangeTrailers sends a message's trailers (phase ph: request or
// response trailers) when there are some, and applies the answer's
// header mutation to them in place. It returns the reply that answers
// the request (an immediate response, a failed exchange or mutation),
// nil when the message goes on. f.mu is held.
func (f *filter) exchangeTrailers(trailers http.Header, ph phase) *reply {
	if f.done || len(trailers) == 0 {
		return nil
	}
	hm := &corev3.HeaderMap{}
	for name, vs := range trailers {
		name = strings.ToLower(name)
		if !f.c.forwards(name) {
			continue
		}
		for _, v := range vs {
			hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte(v)})
		}
	}
	m := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_ResponseTrailers{
		ResponseTrailers: &extprocsvc.HttpTrailers{Trailers: hm},
	}}
	if ph == phaseRequestTrailers {
		m = &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestTrailers{
			RequestTrailers: &extprocsvc.HttpTrailers{Trailers: hm},
		}}
	}
	r, rep := f.call(m)
	if rep != nil {
		return rep
	}
	ok, rep := f.answer(r, ph)
	if !ok {
		return rep
	}
	mut := r.GetResponseTrailers().GetHeaderMutation()
	if ph == phaseRequestTrailers {
		mut = r.GetRequestTrailers().GetHeaderMutation()
	}
	if mut != nil {
		if err := applyHeaderMutation(mut, head{h: trailerEditor(trailers)}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
			f.saveAnswer(r, err)
			return f.mutationFailed(err)
		}
	}
	f.saveAnswer(r, nil)
	return nil
}

// requestTrailers sends the request trailers, when the mode says so and
// there are some, and returns them as the answer changed them; a reply
// answers the request (an httpfilter.BodyError) when nothing was sent
// back yet.
func (f *filter) requestTrailers(trailers http.Header) (http.Header, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.mode.requestTrailers {
		return trailers, nil
	}
	if rep := f.exchangeTrailers(trailers, phaseRequestTrailers); rep != nil {
		f.replyHeaders, f.replied = rep.headers, true
		return nil, &httpfilter.BodyError{Status: rep.status, Body: rep.body, Details: rep.details}
	}
	return trailers, nil
}

// trailerDecoder passes the request body and sends its trailers
// (request_trailer_mode SEND without the STREAMED body mode); with
// fixed set, it puts fixed in place of the trailers instead (the
// trailers of a buffered body, already processed).
type trailerDecoder struct {
	f        *filter
	fixed    http.Header
	fixedSet bool
}

var _ httpfilter.CheckedTrailerDecoder = (*trailerDecoder)(nil)

// DecodeData implements httpfilter.DataDecoder.
func (d *trailerDecoder) DecodeData(p []byte) ([]byte, error) { return p, nil }

// DecodeEnd implements httpfilter.DataDecoder.
func (d *trailerDecoder) DecodeEnd() ([]byte, error) { return nil, nil }

// DecodeTrailers implements httpfilter.TrailerDecoder (the connection
// manager calls DecodeTrailersChecked).
func (d *trailerDecoder) DecodeTrailers(t http.Header) http.Header {
	t, _ = d.DecodeTrailersChecked(t)
	return t
}

// DecodeTrailersChecked implements httpfilter.CheckedTrailerDecoder.
func (d *trailerDecoder) DecodeTrailersChecked(t http.Header) (http.Header, error) {
	if d.fixedSet {
		return d.fixed, nil
	}
	return d.f.requestTrailers(t)
}

// trailerEditor edits trailers as a router.HeaderEditor, names matched
// without regard to case.
type trailerEditor http.Header

// key is the map key of name, or name itself when absent.
func (t trailerEditor) key(name string) string {
	for k := range t {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return name
}

// Get implements router.HeaderEditor.
func (t trailerEditor) Get(name string) (string, bool) {
	vs, ok := t[t.key(name)]
	return strings.Join(vs, ","), ok
}

// Set implements router.HeaderEditor.
func (t trailerEditor) Set(name, value string) {
	t.Del(name)
	t[name] = []string{value}
}

// Add implements router.HeaderEditor.
func (t trailerEditor) Add(name, value string) {
	k := t.key(name)
	t[k] = append(t[k], value)
}

// Del implements router.HeaderEditor.
func (t trailerEditor) Del(name string) { delete(t, t.key(name)) }

// replacer replaces the first n bytes of a body (all of it when n < 0)
// with body, as a request decoder or a response encoder.
type replacer struct {
	body []byte
	n    int
	seen int
	sent bool
}

// cut passes p through the replacement.
func (r *replacer) cut(p []byte) []byte {
	if r.n < 0 {
		return nil
	}
	if r.seen < r.n {
		k := min(r.n-r.seen, len(p))
		r.seen += k
		p = p[k:]
		if r.seen < r.n {
			return nil
		}
	}
	if !r.sent {
		r.sent = true
		return append(append([]byte(nil), r.body...), p...)
	}
	return p
}

// tail is what is left to send at the body's end.
func (r *replacer) tail() []byte {
	if r.sent {
		return nil
	}
	r.sent = true
	return r.body
}

// DecodeData implements httpfilter.DataDecoder.
func (r *replacer) DecodeData(p []byte) ([]byte, error) { return r.cut(p), nil }

// DecodeEnd implements httpfilter.DataDecoder.
func (r *replacer) DecodeEnd() ([]byte, error) { return r.tail(), nil }

// EncodeData implements httpfilter.DataEncoder.
func (r *replacer) EncodeData(p []byte) ([]byte, error) { return r.cut(p), nil }

// EncodeEnd implements httpfilter.DataEncoder.
func (r *replacer) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	return r.tail(), trailers, nil
}
