package extproc

import (
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// send_body_without_waiting_for_header_response: in STREAMED mode, the
// request body's pieces go to the processor as they arrive while the
// answer to the request headers is awaited, as Envoy's decodeData sends
// them while its headers callback is pending. The request head is held
// meanwhile (the filter has not returned from DecodeHeaders), and the
// pieces read are held too (httpfilter.RequestBodyReader). The processor
// answers in order: the headers first, then each piece; once the headers'
// answer has applied, the request goes on and the pieces' answers are
// read as the body reaches the filter's decoder, which sends the pieces
// that came later as STREAMED does.

// earlyPiece is a piece of the request body sent before the headers'
// answer came: its bytes (what goes upstream when its answer leaves them
// as they are), or the body's end (the empty message with end_of_stream).
type earlyPiece struct {
	p   []byte
	end bool
}

// earlyHeadersAnswer is the outcome of the wait for the request headers'
// answer: the answer, or the stream's end, or the timeout.
type earlyHeadersAnswer struct {
	r    *extprocsvc.ProcessingResponse
	err  error
	late bool
}

// sendsBodyEarly reports whether the request's body goes to the processor
// before the headers' answer.
func (f *filter) sendsBodyEarly(s httpfilter.Stream) (httpfilter.RequestBodyReader, bool) {
	c := f.c
	if !c.sendBodyEarly || c.observability || c.http != nil || c.upstream ||
		f.mode.requestBody != extprocv3.ProcessingMode_STREAMED || s.Request().Method == "CONNECT" {
		// In observability_mode nothing is awaited anyway; an
		// http_service sends no body.
		return nil, false
	}
	rs, ok := s.(httpfilter.RequestBodyReader)
	if !ok || !rs.ReadsRequestBodyEarly() {
		return nil, false
	}
	return rs, true
}

// decodeHeadersEarly sends the request headers, then the body's pieces
// as they arrive until the headers' answer comes (or the body ends, or
// the buffer limit is held), then applies that answer.
func (f *filter) decodeHeadersEarly(s httpfilter.Stream, rs httpfilter.RequestBodyReader) httpfilter.Status {
	r, early, rep, status, answered := f.exchangeEarly(s, rs)
	if !answered {
		if rep != nil {
			return f.sendReply(s, rep)
		}
		return status
	}
	// As the answer of DecodeHeaders' own exchange, applied without f.mu
	// (a reply runs the filter's EncodeHeaders).
	if rep = f.requestHeadersAnswer(s, r); rep != nil {
		return f.sendReply(s, rep)
	}
	if f.done || f.mode.requestBody != extprocv3.ProcessingMode_STREAMED {
		// Processing is over (a spurious answer), or
		// CONTINUE_AND_REPLACE replaced the body: the pieces' answers
		// are not read, as Envoy drops its queued chunks.
		return httpfilter.Continue
	}
	f.mu.Lock()
	f.early = early
	f.mu.Unlock()
	s.TransformRequestBody(&streamDecoder{f: f, skip: earlyBytes(early)})
	return httpfilter.Continue
}

// exchangeEarly sends the request headers and the body's pieces, under
// f.mu, and waits for the headers' answer. answered reports the answer r
// (early are the pieces sent); otherwise rep is the reply that answers
// the request (a failure), or status is what DecodeHeaders returns.
func (f *filter) exchangeEarly(s httpfilter.Stream, rs httpfilter.RequestBodyReader) (r *extprocsvc.ProcessingResponse, early []earlyPiece, rep *reply, status httpfilter.Status, answered bool) {
	c := f.c
	req := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocsvc.HttpHeaders{Headers: f.requestHeaderMap(s), EndOfStream: false},
	}}
	f.mu.Lock()
	defer f.mu.Unlock()
	timer := time.NewTimer(c.messageTimeout)
	defer timer.Stop()
	if f.done {
		return nil, nil, nil, httpfilter.Continue, false
	}
	f.encodeProtocolConfig(req)
	if rep, sent := f.send(req, timer); !sent {
		return nil, nil, rep, httpfilter.Continue, false
	}
	st := f.st
	res, stop := make(chan earlyHeadersAnswer, 1), make(chan struct{})
	go func() {
		r, err, late := c.waitAnswer(st, timer, false)
		if late {
			// A piece's send that waits for the processor's flow
			// control returns.
			st.cancel()
		}
		res <- earlyHeadersAnswer{r: r, err: err, late: late}
		close(stop)
	}()
	sendPiece := func(p []byte, end bool) {
		m := bodyMessage(p, end, phaseRequestBody)
		m.MetadataContext = f.mdContext
		st.send(m)
		c.stats.msgsSent.Inc()
		early = append(early, earlyPiece{p: p, end: end})
	}
	_, _, ok := rs.ReadRequestBodyUntil(stop, bodyLimit, func(p []byte, end bool) {
		if len(p) > 0 {
			sendPiece(p, false)
		}
		if end {
			// The body's end is its own message, as STREAMED sends it.
			sendPiece(nil, true)
		}
	})
	if !ok {
		// The stream has answered (the body stopped arriving) or the
		// client went away: the answer is not waited for.
		st.cancel()
		<-res
		f.finish(true)
		return nil, nil, nil, httpfilter.Stop, false
	}
	a := <-res
	switch {
	case a.late:
		return nil, nil, f.timedOut(), httpfilter.Continue, false
	case a.err != nil:
		return nil, nil, f.streamEnded(a.err), httpfilter.Continue, false
	}
	return a.r, early, nil, httpfilter.Continue, true
}

// earlyBytes is how many bytes of the body the early pieces hold.
func earlyBytes(early []earlyPiece) int {
	n := 0
	for _, e := range early {
		n += len(e.p)
	}
	return n
}

// earlyAnswers reads the answers to the pieces sent early, in order, and
// returns what goes upstream in their place; endSent reports that the
// body's end was among them. f.mu is held.
func (f *filter) earlyAnswers() (out []byte, endSent bool, err error) {
	early := f.early
	f.early = nil
	for i, e := range early {
		endSent = endSent || e.end
		if f.done {
			// Processing ended (failure_mode_allow): the rest goes as
			// the client sent it.
			for _, rest := range early[i:] {
				out = append(out, rest.p...)
				endSent = endSent || rest.end
			}
			return out, endSent, nil
		}
		timer := time.NewTimer(f.c.messageTimeout)
		r, rep := f.await(timer, false)
		timer.Stop()
		if rep == nil {
			var ok bool
			if ok, rep = f.answer(r, phaseRequestBody); ok {
				p, _ := replaceBody(bodyAnswer(r, phaseRequestBody).GetBodyMutation(), e.p)
				out = append(out, p...)
				continue
			}
		}
		if rep != nil {
			f.replyHeaders, f.replied = rep.headers, true
			return nil, endSent, &httpfilter.BodyError{Status: rep.status, Body: rep.body, Details: rep.details}
		}
		// Processing is over (the stream closed, or failure_mode_allow
		// covered a failure): this piece goes as it came.
		out = append(out, e.p...)
	}
	return out, endSent, nil
}
