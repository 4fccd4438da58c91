package lua

import (
	"fmt"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
)

// The %RESPONSE_CODE_DETAILS% of the filter's replies: Envoy's for
// respond(); Outrigger's for the 500 of a failed request script (Envoy
// lets the request go on).
const (
	detailsResponse = "lua_response"
	detailsError    = "lua_script_error"
)

// streamFilter is one request's filter: the reply its request script
// asked for, and the response script's run while it waits for the
// response body. Filters are pooled by their configuration, so that a
// request allocates nothing for them.
type streamFilter struct {
	c     *filterConfig
	reply *reply
	wait  *bodyWait
	// reqWait is the request body's wait of a request script that
	// streams the body (bodyChunks(), trailers()).
	reqWait *bodyWait
}

var (
	_ httpfilter.Decoder   = (*streamFilter)(nil)
	_ httpfilter.Encoder   = (*streamFilter)(nil)
	_ httpfilter.Destroyer = (*streamFilter)(nil)
)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	f, _ := c.filters.Get().(*streamFilter)
	if f == nil {
		f = &streamFilter{}
	}
	f.c = c
	return f
}

// OnDestroy implements httpfilter.Destroyer: a response script still
// waiting for a body that will not come is stopped, and the filter goes
// back to the pool.
func (f *streamFilter) OnDestroy() {
	if w := f.wait; w != nil {
		w.cancel()
	}
	if w := f.reqWait; w != nil {
		w.cancel()
	}
	c := f.c
	*f = streamFilter{}
	c.filters.Put(f)
}

// DecodeHeaders implements httpfilter.Decoder: envoy_on_request.
func (f *streamFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	sc := f.c.scriptFor(s)
	if sc == nil || !sc.onRequest {
		return httpfilter.Continue
	}
	if _, has := s.RequestBody(); !has || !sc.streams {
		return f.c.run(s, sc, f, false, nil)
	}
	// A script that may stream the body runs in a goroutine of its own:
	// when it asks for the body's pieces or its trailers, the request's
	// head goes on (as Envoy continues the headers of a script waiting
	// for a chunk or for trailers) and the filter's decoder hands the
	// script each piece on its way upstream. Until then the stream waits
	// for the script, as for any request script.
	w := newBodyWait()
	status := httpfilter.Continue
	go func() {
		defer close(w.done)
		defer f.c.recoverScript("request")
		status = f.c.run(s, sc, f, false, w)
	}()
	select {
	case <-w.done:
		return status
	case <-w.want:
		f.reqWait = w
		s.TransformRequestBody(w)
		return httpfilter.Continue
	}
}

// EncodeReplyHeaders implements httpfilter.ReplyEncoder: upstream, a
// respond() reply gets its headers, and no response script runs on it.
func (f *streamFilter) EncodeReplyHeaders(s httpfilter.Stream) {
	if r := f.reply; r != nil && !r.applied {
		r.apply(s.ResponseHeaders())
	}
}

// EncodeHeaders implements httpfilter.Encoder: the headers of a
// respond() reply, then envoy_on_response. A script that may ask for the
// response body runs in a goroutine of its own when there is a body:
// if it asks, the filter takes the body (holding the head) and the
// script goes on once the body has all arrived.
func (f *streamFilter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if r := f.reply; r != nil && !r.applied {
		r.apply(s.ResponseHeaders())
	}
	sc := f.c.scriptFor(s)
	if sc == nil || !sc.onResponse {
		return httpfilter.Continue
	}
	if _, has := s.ResponseBody(); !has || !sc.readsBody {
		return f.c.run(s, sc, f, true, nil)
	}
	w := newBodyWait()
	go func() {
		defer close(w.done)
		defer f.c.recoverScript("response")
		f.c.run(s, sc, f, true, w)
	}()
	select {
	case <-w.done:
	case <-w.want:
		f.wait = w
		s.TransformResponseBody(w)
	}
	return httpfilter.Continue
}

// recoverScript ends the goroutine of a script's run that panicked. Lua
// errors are caught by the call itself; this is for a bug of the filter,
// which must not take the process down from a goroutine the connection
// manager does not watch. A request script's decoder then fails the
// request.
func (c *filterConfig) recoverScript(direction string) {
	if r := recover(); r != nil {
		c.errors.Inc()
		c.log.Error(fmt.Errorf("panic: %v", r), "lua: "+direction+" script")
	}
}

// run calls the script's envoy_on_request (envoy_on_response when
// response) with the stream's handle on a state of the script's pool. w
// is the response body's wait of a response script run in a goroutine of
// its own, nil otherwise.
func (c *filterConfig) run(s httpfilter.Stream, sc *script, f *streamFilter, response bool, w *bodyWait) httpfilter.Status {
	v, err := sc.free.Get()
	if err != nil {
		// The script loaded once; a state that cannot load it now (its
		// top level depends on something that changed) is a failure of
		// the script like any other.
		return c.failed(s, response, err.Error())
	}
	fn := v.onRequest
	if response {
		fn = v.onResponse
	}
	h := v.h
	h.begin(c, s, response, w)
	expired, err := v.Call(fn, sc.budget, 0, h.fresh(v.L, &h.ud))
	if expired {
		v.broken = true
	}
	r, aborted, newBody := h.reply, h.aborted, h.newBody
	continued := h.continued()
	edit := h.trailerEdit()
	if w != nil && h.chunkOut {
		// The piece the script held when it ended goes on as it left
		// it.
		w.last, w.lastSet = h.chunk, true
	}
	sc.release(v)

	if continued && (expired || err != nil) {
		// The message's head went on: on the request, the decoder
		// fails the request at the next piece of its body (see
		// bodyWait.DecodeData); the response goes on as it is.
		w.failed = true
		msg := luavm.ErrorText(err)
		if expired {
			msg = fmt.Sprintf("script stopped: it ran past its time budget of %v", sc.budget)
		}
		c.errors.Inc()
		c.log.Error(nil, "script log: "+msg)
		return httpfilter.Continue
	}
	switch {
	case aborted:
		// The stream answered while the script waited (a timeout, the
		// client gone): nothing more to do.
		return httpfilter.Stop
	case r != nil:
		// respond() ends the script, as in Envoy, even if the script
		// caught the error that stopped it.
		f.reply = r
		s.SendLocalReply(r.status, r.body, 0, detailsResponse)
		return httpfilter.Stop
	case expired:
		return c.failed(s, response, fmt.Sprintf("script stopped: it ran past its time budget of %v", sc.budget))
	case err != nil:
		return c.failed(s, response, luavm.ErrorText(err))
	}
	switch {
	case response && newBody != nil:
		w.result = newBody
	case !response && (newBody != nil || edit != nil):
		s.TransformRequestBody(&replacedBody{body: newBody, trailers: edit})
	}
	return httpfilter.Continue
}

// failed records a script's failure as Envoy does (the error log line
// "script log: ..." and lua.errors), then answers a request 500; a
// response, already under way, goes on as the upstream sent it.
func (c *filterConfig) failed(s httpfilter.Stream, response bool, msg string) httpfilter.Status {
	c.errors.Inc()
	c.log.Error(nil, "script log: "+msg)
	if response {
		return httpfilter.Continue
	}
	s.SendLocalReply(500, "", 0, detailsError)
	return httpfilter.Stop
}
