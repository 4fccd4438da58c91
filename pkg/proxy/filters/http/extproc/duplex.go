package extproc

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// FULL_DUPLEX_STREAMED: a body's pieces go to the processor as they
// arrive, without waiting for answers, and the processor answers with
// StreamedBodyResponse pieces of its own, as many as it likes, whenever it
// likes, which replace the body; the last has end_of_stream, or, when the
// body has trailers, the trailers' answer ends the body. No message
// timeout applies to the body (Envoy starts no timer in this mode), and
// failure_mode_allow is refused with it, as Envoy refuses it. The request
// body is a httpfilter.SourceDecoder, the response body a
// httpfilter.EmittingEncoder: both are read and written at the
// processor's pace.

// duplex is the state of one direction's FULL_DUPLEX_STREAMED body, shared
// by the request's goroutine and the duplex's own. The filter is pooled
// after OnDestroy: the goroutines touch it only holding mu while closed
// is false, and OnDestroy sets closed first.
type duplex struct {
	f *filter
	// c is the filter's configuration, which the filter, pooled again,
	// forgets.
	c  *config
	st *sideStream
	ph phase
	// md, attrs and proto go with the messages: the metadata context on
	// each, the direction's attributes and the protocol_config on the
	// first only (when the headers message did not carry them).
	md    *corev3.Metadata
	attrs map[string]*structpb.Struct
	proto *extprocsvc.ProtocolConfiguration
	// trailersMode: the trailers are sent (Envoy requires SEND here).
	trailersMode bool

	mu sync.Mutex
	// closed: the filter is destroyed.
	closed bool
	// trailerMut is the trailers' answer, applied to the trailers that
	// go on.
	trailerMut *extprocsvc.HeaderMutation
	// sentTrailers: the trailers went to the processor.
	sentTrailers bool
	// over: processing is over; the rest of the body is not sent.
	// overc is closed then (or when the filter is destroyed).
	over  bool
	overc chan struct{}
}

// setOver marks the duplex's processing over; d.mu is held.
func (d *duplex) setOver() {
	if !d.over {
		d.over = true
		close(d.overc)
	}
}

// splitForResponse readies the stream for the response's messages while
// a FULL_DUPLEX_STREAMED request body still streams: the two directions'
// answers are then read apart (sideStream.splitResponses), as Envoy
// dispatches each answer to its direction, and the response's messages
// go at once, interleaved with the request body's.
func (f *filter) splitForResponse() {
	f.mu.Lock()
	st := f.st
	var reqs []*duplex
	for _, d := range f.duplexes {
		if d.ph == phaseRequestBody {
			reqs = append(reqs, d)
		}
	}
	f.mu.Unlock()
	if st == nil {
		return
	}
	for _, d := range reqs {
		d.mu.Lock()
		active := !d.over
		d.mu.Unlock()
		if active {
			st.splitResponses()
			return
		}
	}
}

// newDuplex readies a FULL_DUPLEX_STREAMED body for phase ph
// (phaseRequestBody or phaseResponseBody), opening the stream if no
// message opened it yet. It returns the reply that answers the request
// when the stream cannot be opened, or nil and nil when processing is
// over (the body passes unprocessed). f.mu is held.
func (f *filter) newDuplex(ph phase) (*duplex, *reply) {
	if f.done {
		return nil, nil
	}
	if f.st == nil {
		timer := time.NewTimer(f.c.messageTimeout)
		defer timer.Stop()
		st, err, late := f.open(timer)
		switch {
		case late:
			return nil, f.timedOut()
		case err != nil:
			return nil, f.streamEnded(err)
		}
		f.st = st
		f.c.stats.streamsStarted.Inc()
	}
	d := &duplex{f: f, c: f.c, st: f.st, ph: ph, md: f.mdContext, overc: make(chan struct{})}
	// Envoy's failureModeAllow() is false once a FULL_DUPLEX_STREAMED
	// body is under way (a route's override could have set it).
	f.failureModeAllow = false
	probe := bodyMessage(nil, false, ph)
	f.addAttributes(probe)
	f.encodeProtocolConfig(probe)
	d.attrs, d.proto = probe.Attributes, probe.ProtocolConfig
	d.trailersMode = f.mode.requestTrailers
	if ph == phaseResponseBody {
		d.trailersMode = f.mode.responseTrailers
	}
	f.duplexes = append(f.duplexes, d)
	return d, nil
}

// close stops the duplex: the filter is being destroyed.
func (d *duplex) close() {
	d.mu.Lock()
	d.closed = true
	d.setOver()
	d.mu.Unlock()
}

// send sends a body piece (or the trailers) to the processor; it may
// wait for the processor's flow control, and returns when the stream is
// closed. It reads nothing of the filter.
func (d *duplex) send(m *extprocsvc.ProcessingRequest) {
	m.MetadataContext = d.md
	if d.attrs != nil {
		m.Attributes, d.attrs = d.attrs, nil
	}
	if d.proto != nil {
		m.ProtocolConfig, d.proto = d.proto, nil
	}
	d.st.send(m)
	d.c.stats.msgsSent.Inc()
}

// sendEnd sends the body's end: the trailers, when there are some and
// the mode sends them, else an empty piece with end_of_stream. It reports
// whether the trailers went.
func (d *duplex) sendEnd(p []byte, trailers http.Header) bool {
	if len(trailers) > 0 && d.trailersMode {
		if len(p) > 0 {
			d.send(bodyMessage(p, false, d.ph))
		}
		d.send(trailersMessage(trailers, d.ph, d.c))
		return true
	}
	d.send(bodyMessage(p, true, d.ph))
	return false
}

// trailersMessage is the trailers message of a body's phase.
func trailersMessage(trailers http.Header, ph phase, c *config) *extprocsvc.ProcessingRequest {
	hm := &corev3.HeaderMap{}
	for name, vs := range trailers {
		name = strings.ToLower(name)
		if !c.forwards(name) {
			continue
		}
		for _, v := range vs {
			hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte(v)})
		}
	}
	if ph == phaseRequestBody {
		return &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocsvc.HttpTrailers{Trailers: hm}}}
	}
	return &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocsvc.HttpTrailers{Trailers: hm}}}
}

// duplexAnswer is what one answer of the processor means for the body.
type duplexAnswer struct {
	// p are bytes of the new body; end: the body has ended.
	p   []byte
	end bool
	// rep answers the request (an immediate response, a failure).
	rep *reply
	// pass: processing is over (the processor closed the stream):
	// the rest of the body goes on unprocessed.
	pass bool
}

// errDuplexClosed ends a duplex whose filter was destroyed.
var errDuplexClosed = errors.New("ext_proc: the request ended")

// next waits for the processor's next answer and says what it means. A
// body answer without a streamed_response, or an answer of another kind,
// is spurious, as in Envoy: counted, processing ends, and so does the
// body. override_message_timeout is ignored (no timer runs).
func (d *duplex) next(stop <-chan struct{}, pass <-chan passPiece) (duplexAnswer, *passPiece, error) {
	for {
		var r *extprocsvc.ProcessingResponse
		var endErr error
		ended := false
		select {
		case r = <-d.st.answers(d.ph == phaseResponseBody):
		case <-d.st.end:
			endErr, ended = d.st.endErr, true
		case pp := <-pass:
			return duplexAnswer{}, &pp, nil
		case <-stop:
			return duplexAnswer{}, nil, errDuplexClosed
		case <-d.overc:
			// Processing of this body is over (the headers' answer
			// replaced it, or ended processing): the rest passes.
			d.mu.Lock()
			closed := d.closed
			d.mu.Unlock()
			if closed {
				return duplexAnswer{}, nil, errDuplexClosed
			}
			return duplexAnswer{pass: true}, nil, nil
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return duplexAnswer{}, nil, errDuplexClosed
		}
		a, again := d.handle(r, ended, endErr)
		if a.pass || a.end || a.rep != nil {
			d.setOver()
		}
		d.mu.Unlock()
		if !again {
			return a, nil, nil
		}
	}
}

// handle is next's handling of one answer (or the stream's end); d.mu is
// held and the filter not destroyed. again: wait for another answer.
func (d *duplex) handle(r *extprocsvc.ProcessingResponse, ended bool, endErr error) (a duplexAnswer, again bool) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.c
	if ended {
		if f.done {
			return duplexAnswer{pass: true}, false
		}
		if rep := f.streamEnded(endErr); rep != nil {
			return duplexAnswer{rep: rep}, false
		}
		return duplexAnswer{pass: true}, false
	}
	if f.done {
		return duplexAnswer{pass: true}, false
	}
	if r.GetOverrideMessageTimeout() != nil {
		c.stats.overrideTimeoutIgnored.Inc()
		return duplexAnswer{}, true
	}
	trailersPhase := phaseRequestTrailers
	if d.ph == phaseResponseBody {
		trailersPhase = phaseResponseTrailers
	}
	ph := d.ph
	if expected(r, trailersPhase) && d.sentTrailers {
		ph = trailersPhase
	}
	ok, rep := f.answer(r, ph)
	if !ok {
		if rep != nil {
			return duplexAnswer{rep: rep}, false
		}
		// Spurious: processing is over, and so is the body.
		return duplexAnswer{end: true}, false
	}
	if ph == trailersPhase {
		mut := r.GetRequestTrailers().GetHeaderMutation()
		if ph == phaseResponseTrailers {
			mut = r.GetResponseTrailers().GetHeaderMutation()
		}
		d.trailerMut = mut
		f.saveAnswer(r, nil)
		return duplexAnswer{end: true}, false
	}
	sr := bodyAnswer(r, d.ph).GetBodyMutation().GetStreamedResponse()
	if sr == nil {
		// Envoy: "Normal body mutation response is received while
		// body_mode_ is FULL_DUPLEX_STREAMED", a spurious message.
		c.stats.spuriousMsgs.Inc()
		f.finish(true)
		f.saveAnswer(r, errSpurious)
		return duplexAnswer{end: true}, false
	}
	f.saveAnswer(r, nil)
	return duplexAnswer{p: sr.GetBody(), end: sr.GetEndOfStream()}, false
}

// editTrailers applies the trailers' answer to t.
func (d *duplex) editTrailers(t http.Header) (http.Header, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.trailerMut == nil || len(t) == 0 {
		return t, nil
	}
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := applyHeaderMutation(d.trailerMut, head{h: trailerEditor(t)}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
		rep := f.mutationFailed(err)
		if rep != nil {
			return nil, &httpfilter.BodyError{Status: rep.status, Body: rep.body, Details: rep.details}
		}
	}
	return t, nil
}

// bodyError is the request's answer for rep.
func (f *filter) bodyError(rep *reply) error {
	f.mu.Lock()
	f.replyHeaders, f.replied = rep.headers, true
	f.mu.Unlock()
	return &httpfilter.BodyError{Status: rep.status, Body: rep.body, Details: rep.details}
}

// duplexDecoder is a FULL_DUPLEX_STREAMED request body.
type duplexDecoder struct {
	d *duplex
	// stop ends the pump when the body after the decoder has ended.
	stop chan struct{}
	// pass carries the pump's pieces once processing is over, and its
	// end (or the error that cut the body); pumped is closed when the
	// pump sent the whole body to the processor.
	pass   chan passPiece
	pumped chan struct{}
	ended  bool
	// early: the body streams from DecodeHeaders on (see duplexhead.go).
	early bool
}

// passPiece is a piece of the body before the decoder that goes on
// unprocessed, or the pump's end.
type passPiece struct {
	p   []byte
	end bool
	err error
}

var (
	_ httpfilter.SourceDecoder         = (*duplexDecoder)(nil)
	_ httpfilter.CheckedTrailerDecoder = (*duplexDecoder)(nil)
)

// DecodeData implements httpfilter.DataDecoder; the connection manager
// calls DecodeFrom instead.
func (dd *duplexDecoder) DecodeData(p []byte) ([]byte, error) { return p, nil }

// DecodeEnd implements httpfilter.DataDecoder.
func (dd *duplexDecoder) DecodeEnd() ([]byte, error) { return nil, nil }

// DecodeFrom implements httpfilter.SourceDecoder: a goroutine sends the
// body's pieces as they come; the body after the decoder is the
// processor's answers.
func (dd *duplexDecoder) DecodeFrom(next func() ([]byte, error), trailers func() http.Header) func() ([]byte, error) {
	dd.stop, dd.pass, dd.pumped = make(chan struct{}), make(chan passPiece, 1), make(chan struct{})
	started := false
	if dd.early {
		// Started during DecodeHeaders (httpfilter.SourceStarter): the
		// pieces go while the headers' answer is awaited.
		started = true
		go dd.pump(next, trailers)
	}
	return func() ([]byte, error) {
		if !started {
			started = true
			go dd.pump(next, trailers)
		}
		return dd.read()
	}
}

// pump sends the body's pieces to the processor as next gives them; once
// processing is over, they go on unprocessed (pass).
func (dd *duplexDecoder) pump(next func() ([]byte, error), trailers func() http.Header) {
	d := dd.d
	passing := false
	put := func(pp passPiece) bool {
		select {
		case dd.pass <- pp:
			return true
		case <-dd.stop:
			return false
		}
	}
	for {
		p, err := next()
		end := errors.Is(err, io.EOF)
		if err != nil && !end {
			put(passPiece{err: err})
			return
		}
		if !passing {
			d.mu.Lock()
			passing = d.closed || d.over
			d.mu.Unlock()
		}
		if passing {
			if !put(passPiece{p: p, end: end}) || end {
				return
			}
			continue
		}
		if end {
			t := trailers()
			d.mu.Lock()
			d.sentTrailers = len(t) > 0 && d.trailersMode
			d.mu.Unlock()
			d.sendEnd(p, t)
			close(dd.pumped)
			return
		}
		if len(p) > 0 {
			d.send(bodyMessage(p, false, d.ph))
		}
	}
}

// read gives the next piece of the body after the decoder.
func (dd *duplexDecoder) read() ([]byte, error) {
	if dd.ended {
		return nil, io.EOF
	}
	d := dd.d
	for {
		a, pp, err := d.next(nil, dd.pass)
		if err != nil {
			dd.end()
			return nil, err
		}
		if pp != nil {
			return dd.passed(*pp)
		}
		switch {
		case a.rep != nil:
			dd.end()
			return nil, d.f.bodyError(a.rep)
		case a.pass:
			// The rest of the client's body goes on as it is.
			select {
			case pp := <-dd.pass:
				return dd.passed(pp)
			case <-dd.pumped:
				dd.end()
				return nil, io.EOF
			}
		case a.end:
			dd.end()
			return a.p, io.EOF
		case len(a.p) > 0:
			return a.p, nil
		}
	}
}

// passed returns an unprocessed piece of the body.
func (dd *duplexDecoder) passed(pp passPiece) ([]byte, error) {
	switch {
	case pp.err != nil:
		dd.end()
		return nil, pp.err
	case pp.end:
		dd.end()
		return pp.p, io.EOF
	}
	return pp.p, nil
}

// end ends the body after the decoder, and the pump.
func (dd *duplexDecoder) end() {
	if !dd.ended {
		dd.ended = true
		close(dd.stop)
	}
}

// DecodeTrailers implements httpfilter.TrailerDecoder.
func (dd *duplexDecoder) DecodeTrailers(t http.Header) http.Header {
	t, _ = dd.DecodeTrailersChecked(t)
	return t
}

// DecodeTrailersChecked implements httpfilter.CheckedTrailerDecoder: the
// trailers' answer applies.
func (dd *duplexDecoder) DecodeTrailersChecked(t http.Header) (http.Header, error) {
	return dd.d.editTrailers(t)
}

// duplexEncoder is a FULL_DUPLEX_STREAMED response body: the pieces go to
// the processor from EncodeData, and a goroutine emits its answers.
type duplexEncoder struct {
	d       *duplex
	emit    func([]byte) error
	started bool
	stop    chan struct{}
	// done is closed when the answers ended, err saying how.
	done chan struct{}
	err  error
	// head: the response headers' answer is awaited, the head held
	// until it applies (see duplexhead.go); s is the stream it edits.
	head bool
	s    httpfilter.Stream
	// replaced: the headers' answer put a body (or a reply) of its own
	// in place of the upstream's, whose pieces are dropped.
	replaced atomic.Bool
}

var (
	_ httpfilter.EmittingEncoder = (*duplexEncoder)(nil)
	_ httpfilter.HeadHolder      = (*duplexEncoder)(nil)
)

// HoldsHead implements httpfilter.HeadHolder: the head waits for its
// answer.
func (e *duplexEncoder) HoldsHead() bool { return e.head }

// SetEmitter implements httpfilter.EmittingEncoder.
func (e *duplexEncoder) SetEmitter(emit func([]byte) error) { e.emit = emit }

// start starts the goroutine that emits the processor's pieces.
func (e *duplexEncoder) start() {
	if e.started {
		return
	}
	e.started = true
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go e.receive()
}

// receive emits the processor's answers until the body's end. A reply
// cuts the response, whose head has left, as in STREAMED.
func (e *duplexEncoder) receive() {
	var err error
	defer func() {
		e.err = err
		close(e.done)
	}()
	if e.head {
		if err = e.headAnswer(); err != nil || e.replaced.Load() {
			return
		}
	}
	for {
		a, _, nerr := e.d.next(e.stop, nil)
		switch {
		case nerr != nil:
			err = nerr
			return
		case a.rep != nil:
			err = errReset
			return
		}
		if len(a.p) > 0 {
			if err = e.emit(a.p); err != nil {
				return
			}
		}
		if a.end || a.pass {
			return
		}
	}
}

// over reports whether processing is over: the body then passes.
func (e *duplexEncoder) over() bool {
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	return e.d.over || e.d.closed
}

// EncodeData implements httpfilter.DataEncoder: the piece goes to the
// processor; what goes on is what the processor answers, emitted.
func (e *duplexEncoder) EncodeData(p []byte) ([]byte, error) {
	e.start()
	if e.replaced.Load() {
		return nil, nil
	}
	select {
	case <-e.done:
		if e.err != nil {
			return nil, e.err
		}
	default:
	}
	if e.over() {
		return p, nil
	}
	e.d.send(bodyMessage(p, false, e.d.ph))
	return nil, nil
}

// EncodeEnd implements httpfilter.DataEncoder: the body's end (or the
// trailers) goes to the processor, and the end waits for its last pieces.
func (e *duplexEncoder) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	e.start()
	if !e.over() {
		e.d.mu.Lock()
		e.d.sentTrailers = len(trailers) > 0 && e.d.trailersMode
		e.d.mu.Unlock()
		e.d.sendEnd(nil, trailers)
	}
	<-e.done
	if e.err != nil {
		return nil, nil, e.err
	}
	if e.replaced.Load() {
		return nil, nil, nil
	}
	t, err := e.d.editTrailers(trailers)
	if err != nil {
		return nil, nil, errReset
	}
	return nil, t, nil
}
