package extproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/status"
)

// Envoy's %RESPONSE_CODE_DETAILS% of the filter's error replies.
const (
	detailsTimeout    = "ext_proc_error_per-message_timeout_exceeded"
	detailsGrpcPrefix = "ext_proc_error_gRPC_error_"
)

// phase is the part of the exchange a message carries.
type phase uint8

const (
	phaseRequestHeaders phase = iota
	phaseRequestBody
	phaseRequestTrailers
	phaseResponseHeaders
	phaseResponseBody
	phaseResponseTrailers
)

// reply is how the filter answers a request in the upstream's place: an
// immediate_response, or the error of a failed exchange.
type reply struct {
	status  int
	body    string
	details string
	// grpcStatus is the immediate response's grpc_status, -1 without.
	grpcStatus int64
	// headers edit the reply's headers.
	headers *extprocsvc.HeaderMutation
}

// statusOnError is the status_on_error of a filter: its code when it is
// an HTTP status (100 to 511), else 500, as Envoy's toErrorCode.
func statusOnError(st *typev3.HttpStatus) int {
	if code := int(st.GetCode()); code >= 100 && code <= 511 {
		return code
	}
	return 500
}

// errorReply is the reply to a failed exchange.
func errorReply(status int, details string) *reply {
	return &reply{status: status, details: details, grpcStatus: -1}
}

// call sends m to the processor, opening the stream on first use, and
// waits for its answer, at most message_timeout (or the processor's
// override_message_timeout). It returns the answer; or nil and nil when
// the request goes on unprocessed from now on (processing was over, the
// processor closed the stream, or failure_mode_allow covers a failure);
// or the reply that answers the request. In observability_mode, m is
// queued for the processor and nothing is awaited.
func (f *filter) call(m *extprocsvc.ProcessingRequest) (*extprocsvc.ProcessingResponse, *reply) {
	c := f.c
	if f.done {
		return nil, nil
	}
	if c.observability {
		f.observe(m)
		return nil, nil
	}
	f.encodeProtocolConfig(m)
	timer := time.NewTimer(c.messageTimeout)
	defer timer.Stop()
	if c.http != nil {
		return f.callHTTP(m, timer)
	}
	if rep, sent := f.send(m, timer); !sent {
		return nil, rep
	}
	return f.await(timer, !requestMessage(m))
}

// requestMessage reports whether m is one of the request's phases.
func requestMessage(m *extprocsvc.ProcessingRequest) bool {
	switch m.GetRequest().(type) {
	case *extprocsvc.ProcessingRequest_RequestHeaders, *extprocsvc.ProcessingRequest_RequestBody, *extprocsvc.ProcessingRequest_RequestTrailers:
		return true
	}
	return false
}

// send sends m on the stream, opening it first, under timer (the
// message's timeout, which goes on running for its answer). sent false
// means m did not go: rep is the reply that answers the request, or nil
// when the request goes on unprocessed. f.st is set when sent.
func (f *filter) send(m *extprocsvc.ProcessingRequest, timer *time.Timer) (rep *reply, sent bool) {
	c := f.c
	if f.st == nil {
		st, err, late := f.open(timer)
		switch {
		case late:
			return f.timedOut(), false
		case err != nil:
			return f.streamEnded(err), false
		}
		f.st = st
		c.stats.streamsStarted.Inc()
	}
	m.MetadataContext = f.mdContext
	f.addAttributes(m)
	// Sending may wait for the processor's flow control: the message
	// timeout bounds it too.
	sentc, st := make(chan struct{}), f.st
	go func() {
		st.send(m)
		close(sentc)
	}()
	select {
	case <-sentc:
	case <-timer.C:
		rep := f.timedOut()
		// The stream is cancelled: the send returns, and m (which may
		// hold the caller's body bytes) is no longer read.
		<-sentc
		return rep, false
	}
	c.stats.msgsSent.Inc()
	return nil, true
}

// await waits for the answer to the message sent last, of the
// response's phases when response, until timer fires; it returns as call
// does.
func (f *filter) await(timer *time.Timer, response bool) (*extprocsvc.ProcessingResponse, *reply) {
	r, err, late := f.c.waitAnswer(f.st, timer, response)
	switch {
	case late:
		return nil, f.timedOut()
	case err != nil:
		return nil, f.streamEnded(err)
	}
	return r, nil
}

// waitAnswer waits for st's next answer until timer fires (late), or
// for the stream's end (err); a nil timer never fires (no timer runs:
// an override_message_timeout is then ignored). It reads nothing of a
// filter, so that a goroutine may wait while the request goes on (see
// early.go). response: the answer is to one of the response's phases.
func (c *config) waitAnswer(st *sideStream, timer *time.Timer, response bool) (r *extprocsvc.ProcessingResponse, err error, late bool) {
	overridden := false
	var fired <-chan time.Time
	if timer != nil {
		fired = timer.C
	}
	answers := st.answers(response)
	for {
		select {
		case r := <-answers:
			if d := r.GetOverrideMessageTimeout(); d != nil {
				// The processor asks for more time, once per message,
				// within max_message_timeout.
				t := d.AsDuration()
				if timer == nil || overridden || t < time.Millisecond || t > c.maxMessageTimeout {
					c.stats.overrideTimeoutIgnored.Inc()
					continue
				}
				overridden = true
				timer.Reset(t)
				c.stats.overrideTimeoutReceived.Inc()
				continue
			}
			return r, nil, false
		case <-st.end:
			return nil, st.endErr, false
		case <-fired:
			return nil, nil, true
		}
	}
}

// encodeProtocolConfig puts the protocol_config on the first message the
// processor gets for the request, as Envoy's encodeProtocolConfig: the
// body modes in effect and send_body_without_waiting_for_header_response,
// so that the processor knows what will come (not in observability_mode,
// where nothing it answers is read).
func (f *filter) encodeProtocolConfig(m *extprocsvc.ProcessingRequest) {
	if f.protocolSent || f.c.observability {
		return
	}
	f.protocolSent = true
	m.ProtocolConfig = &extprocsvc.ProtocolConfiguration{
		RequestBodyMode:                         f.mode.requestBody,
		ResponseBodyMode:                        f.mode.responseBody,
		SendBodyWithoutWaitingForHeaderResponse: f.c.sendBodyEarly,
	}
}

// open opens the stream, waiting at most until timer fires (late): a
// processor that cannot be reached in time is a message timeout, as in
// Envoy, whose timer runs while the stream opens.
func (f *filter) open(timer *time.Timer) (st *sideStream, err error, late bool) {
	type opened struct {
		st  *sideStream
		err error
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The goroutine may outlive the call (and the filter, pooled again):
	// it reads nothing of f.
	res, svc, md, sp := make(chan opened, 1), f.svc, f.initialMetadata, f.streamSpan()
	go func() {
		st, err := svc.openStream(ctx, cancel, md, sp)
		res <- opened{st, err}
	}()
	select {
	case o := <-res:
		return o.st, o.err, false
	case <-timer.C:
		// A stream that opens now ends with its context.
		cancel()
		return nil, nil, true
	}
}

// timedOut handles a message the processor did not answer in time: the
// request fails with 504, or goes on unprocessed with
// failure_mode_allow.
func (f *filter) timedOut() *reply {
	c := f.c
	c.stats.msgTimeouts.Inc()
	f.finish(false)
	if f.failureModeAllow {
		c.stats.failureModeAllowed.Inc()
		return nil
	}
	return errorReply(504, detailsTimeout)
}

// streamEnded handles the end of the stream (or its failure to open):
// a clean close lets the request go on unprocessed, as does a failure
// with failure_mode_allow; any other failure answers status_on_error
// (500 by default).
func (f *filter) streamEnded(err error) *reply {
	c := f.c
	if errors.Is(err, io.EOF) {
		f.finish(true)
		return nil
	}
	c.stats.streamsFailed.Inc()
	if f.failureModeAllow {
		f.finish(true)
		c.stats.failureModeAllowed.Inc()
		return nil
	}
	f.finish(false)
	c.log.V(1).Info("ext_proc stream failed", "error", err.Error())
	return errorReply(c.statusOnError, fmt.Sprintf("%s%d", detailsGrpcPrefix, status.Code(err)))
}

// finish ends processing: nothing more goes to the processor for this
// request, and the stream is closed (counted in streams_closed when
// closed says so).
func (f *filter) finish(closed bool) {
	f.done = true
	if f.st != nil {
		f.st.close()
		f.st = nil
		if closed {
			f.c.stats.streamsClosed.Inc()
		}
	}
}

// expected reports whether an answer's kind is the one phase p waits for.
func expected(r *extprocsvc.ProcessingResponse, p phase) bool {
	switch r.GetResponse().(type) {
	case *extprocsvc.ProcessingResponse_RequestHeaders:
		return p == phaseRequestHeaders
	case *extprocsvc.ProcessingResponse_RequestBody:
		return p == phaseRequestBody
	case *extprocsvc.ProcessingResponse_RequestTrailers:
		return p == phaseRequestTrailers
	case *extprocsvc.ProcessingResponse_ResponseHeaders:
		return p == phaseResponseHeaders
	case *extprocsvc.ProcessingResponse_ResponseBody:
		return p == phaseResponseBody
	case *extprocsvc.ProcessingResponse_ResponseTrailers:
		return p == phaseResponseTrailers
	}
	return false
}

// immediate turns an immediate_response into the reply, as Envoy's
// sendImmediateResponse: status 200 when unset or not a final status,
// the details' spaces replaced.
func immediate(ir *extprocsvc.ImmediateResponse) *reply {
	code := int(ir.GetStatus().GetCode())
	if code < 200 {
		code = 200
	}
	r := &reply{
		status:     code,
		body:       string(ir.GetBody()),
		details:    detailsOf(ir.GetDetails()),
		grpcStatus: -1,
		headers:    ir.GetHeaders(),
	}
	if g := ir.GetGrpcStatus(); g != nil {
		r.grpcStatus = int64(g.GetStatus())
	}
	return r
}

// detailsOf replaces the white space of a details string with '_', as
// Envoy's StringUtil::replaceAllEmptySpace.
func detailsOf(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
}

// answer reads the processor's answer to phase p, as Envoy's
// onReceiveMessage: a mode_override applies to a head's answer when
// allow_mode_override says so (and send_body_without_waiting_for_header_response
// does not: the body may have gone already) and allowed_override_modes, if any, has
// it; an immediate_response answers the request
// (unless disable_immediate_response, which makes it spurious); an
// answer of another kind is spurious, counted, and ends processing with
// the request going on. ok reports an answer of the expected kind,
// counted as received.
func (f *filter) answer(r *extprocsvc.ProcessingResponse, p phase) (ok bool, rep *reply) {
	c := f.c
	if r == nil {
		return false, nil
	}
	if mo := r.GetModeOverride(); mo != nil && c.allowModeOverride && !c.sendBodyEarly && (p == phaseRequestHeaders || p == phaseResponseHeaders) {
		if c.allowedOverrides != nil && !c.allowedOverrides[overrideKey(mo)] {
			c.log.V(1).Info("ext_proc mode_override not in allowed_override_modes, ignored")
		} else if m, err := compileMode(mo); err == nil {
			f.mode = m
		} else {
			c.log.V(1).Info("ext_proc mode_override ignored", "error", err.Error())
		}
	}
	if ir := r.GetImmediateResponse(); ir != nil && !c.disableImmediate {
		c.stats.msgsReceived.Inc()
		f.finish(true)
		f.saveAnswer(r, nil)
		return false, immediate(ir)
	}
	if !expected(r, p) {
		c.stats.spuriousMsgs.Inc()
		f.finish(true)
		f.saveAnswer(r, errSpurious)
		return false, nil
	}
	c.stats.msgsReceived.Inc()
	return true, nil
}

// errSpurious is how an answer of a kind the filter did not wait for
// failed, for on_processing_response (Envoy's "unhandled message").
var errSpurious = errors.New("spurious message")

// saveAnswer hands answer r, and what handling it failed with, to
// on_processing_response, when there is one.
func (f *filter) saveAnswer(r *extprocsvc.ProcessingResponse, failure error) {
	if f.saved != nil {
		f.c.saver.after(f.saved, r, failure)
	}
}

// mutationFailed is the reply to an answer whose mutation failed: 500,
// the error as details, as Envoy answers a rejected mutation.
func (f *filter) mutationFailed(err error) *reply {
	f.finish(true)
	return errorReply(500, detailsOf(err.Error()))
}

// addAttributes puts the direction's attributes on m when they have not
// been sent yet: once per direction, with its first message.
func (f *filter) addAttributes(m *extprocsvc.ProcessingRequest) {
	switch m.GetRequest().(type) {
	case *extprocsvc.ProcessingRequest_RequestHeaders, *extprocsvc.ProcessingRequest_RequestBody, *extprocsvc.ProcessingRequest_RequestTrailers:
		if f.reqAttrs != nil {
			m.Attributes, f.reqAttrs = f.reqAttrs, nil
		}
	default:
		if f.respAttrs != nil {
			m.Attributes, f.respAttrs = f.respAttrs, nil
		}
	}
}
