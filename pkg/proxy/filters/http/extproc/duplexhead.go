package extproc

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// FULL_DUPLEX_STREAMED heads. In this mode Envoy sends the headers and
// then each body piece as it comes, without waiting for the headers'
// answer and without a message timer: the processor may hold the whole
// message (headers, body, trailers) before it answers the headers, then
// answers in order, headers first. The request's body streams from
// DecodeHeaders on (httpfilter.SourceStarter) while the head is held; the
// response's head is held by its encoder (httpfilter.HeadHolder) until
// the headers' answer applies, while its pieces go.

// duplexHead reports whether a direction's head goes without its answer
// being awaited: headers SEND, body FULL_DUPLEX_STREAMED, a gRPC
// processor that answers (not observability_mode).
func (f *filter) duplexHead(body extprocv3.ProcessingMode_BodySendMode, headers bool) bool {
	return headers && body == extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED && !f.c.observability && f.c.http == nil && !f.done
}

// headersAnswer waits for the answer to the direction's headers, with no
// timer: an override_message_timeout is ignored, as the body's are.
func (d *duplex) headersAnswer(stop <-chan struct{}) (*extprocsvc.ProcessingResponse, error) {
	response := d.ph == phaseResponseBody
	for {
		select {
		case r := <-d.st.answers(response):
			if r.GetOverrideMessageTimeout() != nil {
				d.c.stats.overrideTimeoutIgnored.Inc()
				continue
			}
			return r, nil
		case <-d.st.end:
			return nil, d.st.endErr
		case <-stop:
			return nil, errDuplexClosed
		}
	}
}

// decodeHeadersDuplex sends the request headers and streams the body to
// the processor from now on, while the headers' answer is awaited
// without a timer (the stream's idle and request timeouts, or the client
// going away, still end the wait).
func (f *filter) decodeHeadersDuplex(s httpfilter.Stream, ss httpfilter.SourceStarter) httpfilter.Status {
	req := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocsvc.HttpHeaders{Headers: f.requestHeaderMap(s), EndOfStream: false},
	}}
	f.mu.Lock()
	// The attributes and the protocol_config go with the headers.
	f.addAttributes(req)
	f.encodeProtocolConfig(req)
	d, rep := f.newDuplex(phaseRequestBody)
	f.mu.Unlock()
	if rep != nil {
		return f.sendReply(s, rep)
	}
	if d == nil {
		return httpfilter.Continue
	}
	d.send(req)
	if !ss.StartRequestSource(&duplexDecoder{d: d, early: true}) {
		// The stream has answered (the client could not be told to
		// send its body).
		d.close()
		return httpfilter.Stop
	}
	type answer struct {
		r   *extprocsvc.ProcessingResponse
		err error
	}
	res, got, stop := make(chan answer, 1), make(chan struct{}), make(chan struct{})
	go func() {
		r, err := d.headersAnswer(stop)
		res <- answer{r, err}
		close(got)
	}()
	if !s.Wait(got) {
		// Answered (408) or abandoned: the body's goroutine ends with
		// the filter (OnDestroy).
		close(stop)
		return httpfilter.Stop
	}
	a := <-res
	var status httpfilter.Status
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return httpfilter.Stop
	}
	f.mu.Lock()
	switch {
	case f.done:
		d.setOver()
	case a.err != nil:
		rep = f.streamEnded(a.err)
	default:
		rep = f.requestHeadersAnswer(s, a.r)
	}
	if rep == nil && (f.done || f.mode.requestBody != extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED) {
		// Processing is over (a spurious answer, the processor closed
		// the stream), or CONTINUE_AND_REPLACE replaced the body: the
		// rest of the client's body passes (through the replacement),
		// the pieces the processor got are dropped, as Envoy drops what
		// it queued.
		d.setOver()
	}
	f.mu.Unlock()
	d.mu.Unlock()
	if rep != nil {
		d.close()
		status = f.sendReply(s, rep)
	}
	return status
}

// encodeHeadersDuplex sends the response headers and lets the body's
// pieces follow at once: the encoder holds the head until the headers'
// answer applies. f.mu is held.
func (f *filter) encodeHeadersDuplex(s httpfilter.Stream) httpfilter.Status {
	req := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocsvc.HttpHeaders{Headers: f.responseHeaderMap(s), EndOfStream: false},
	}}
	f.addAttributes(req)
	f.encodeProtocolConfig(req)
	d, rep := f.newDuplex(phaseResponseBody)
	if rep != nil {
		f.replaceResponse(s, rep, true)
		return httpfilter.Continue
	}
	if d == nil {
		return httpfilter.Continue
	}
	d.send(req)
	s.TransformResponseBody(&duplexEncoder{d: d, head: true, s: s})
	return httpfilter.Continue
}

// headAnswer waits for the response headers' answer and applies it to
// the held head, which then leaves: with the reply the answer asks for
// (an immediate response, a failure), or the body CONTINUE_AND_REPLACE
// gives, in place of the upstream's body; else before the body's pieces.
func (e *duplexEncoder) headAnswer() error {
	d := e.d
	r, err := d.headersAnswer(e.stop)
	if err == errDuplexClosed {
		return err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errDuplexClosed
	}
	f := d.f
	f.mu.Lock()
	var rep *reply
	var body []byte
	replace := false
	switch {
	case f.done:
	case err != nil:
		rep = f.streamEnded(err)
	default:
		if rep = f.responseHeadersAnswer(e.s, r, false); rep == nil {
			cr := r.GetResponseHeaders().GetResponse()
			if cr.GetStatus() == extprocsvc.CommonResponse_CONTINUE_AND_REPLACE {
				body, replace = replaceBody(cr.GetBodyMutation(), nil)
			}
		}
	}
	if rep != nil {
		f.replaceResponse(e.s, rep, false)
		body, replace = []byte(rep.body), true
	}
	if rep == nil {
		f.declareResponseLength(e.s, -1)
	}
	if rep != nil || f.done || f.mode.responseBody != extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		// The body's processing is over: what the processor got of it
		// is dropped; the rest passes, unless replaced.
		d.setOver()
	}
	f.mu.Unlock()
	d.mu.Unlock()
	if replace {
		e.replaced.Store(true)
	}
	// An empty emit sends the head alone.
	return e.emit(body)
}
