package lua

import (
	"fmt"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// The %RESPONSE_CODE_DETAILS% of the filter's replies: Envoy's for
// respond(); Outrigger's for the 500 of a failed request script (Envoy
// lets the request go on).
const (
	detailsResponse = "lua_response"
	detailsError    = "lua_script_error"
)

var (
	_ httpfilter.Decoder = (*filterConfig)(nil)
	_ httpfilter.Encoder = (*filterConfig)(nil)
)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: envoy_on_request.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	sc := c.scriptFor(s)
	if sc == nil || !sc.onRequest {
		return httpfilter.Continue
	}
	return c.run(s, sc, false)
}

// EncodeHeaders implements httpfilter.Encoder: the headers of a
// respond() reply, then envoy_on_response.
func (c *filterConfig) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if r, ok := s.StreamState(replyKey{}, noReply).(*reply); ok && r != nil && !r.applied {
		r.apply(s.ResponseHeaders())
	}
	sc := c.scriptFor(s)
	if sc == nil || !sc.onResponse {
		return httpfilter.Continue
	}
	return c.run(s, sc, true)
}

// noReply is the StreamState of a stream whose script did not respond.
func noReply() any { return (*reply)(nil) }

// run calls the script's envoy_on_request (or envoy_on_response) with the
// stream's handle on a state of the script's pool.
func (c *filterConfig) run(s httpfilter.Stream, sc *script, response bool) httpfilter.Status {
	v, err := sc.acquire()
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
	h.begin(c, s, response)
	v.budget.start(sc.budget)
	err = v.L.CallByParam(glua.P{Fn: fn, NRet: 0, Protect: true}, v.handleUD)
	expired := v.budget.stop()
	if expired {
		v.broken = true
	}
	r, aborted, newBody := h.reply, h.aborted, h.newBody
	sc.release(v)

	switch {
	case aborted:
		// The stream answered while the script waited (a timeout, the
		// client gone): nothing more to do.
		return httpfilter.Stop
	case r != nil:
		// respond() ends the script, as in Envoy, even if the script
		// caught the error that stopped it.
		s.StreamState(replyKey{}, func() any { return r })
		s.SendLocalReply(r.status, r.body, 0, detailsResponse)
		return httpfilter.Stop
	case expired:
		return c.failed(s, response, fmt.Sprintf("script stopped: it ran past its time budget of %v", sc.budget))
	case err != nil:
		return c.failed(s, response, errorText(err))
	}
	if newBody != nil {
		s.TransformRequestBody(&replacedBody{body: newBody})
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
