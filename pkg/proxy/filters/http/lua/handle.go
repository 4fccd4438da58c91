package lua

import (
	"encoding/base64"
	"net/http"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
)

// handle is the stream handle a script's envoy_on_request or
// envoy_on_response is called with, and the objects it hands out
// (headers, body, stream info, metadata, connection). One handle per
// state serves every call on that state: begin points it at the stream
// of the call, clear forgets the stream after.
type handle struct {
	ud                                       *glua.LUserData
	headersUD, bodyUD, infoUD, dynUD, connUD *glua.LUserData
	sslUD, metaUD, trailersUD, chunkUD       *glua.LUserData
	budget                                   *luavm.Budget
	c                                        *filterConfig
	s                                        httpfilter.Stream
	response                                 bool
	live                                     bool
	// wait is the response body's wait of a response script run in a
	// goroutine of its own (nil: body() finds no response body).
	wait *bodyWait
	// body is the request body body() buffered; newBody what setBytes
	// put in its place (nil when it did not).
	body, newBody []byte
	bodyRead      bool
	// trailers are the message's, once its body has arrived.
	trailers http.Header
	// bufferedTrailers: trailers are the request's, read after body()
	// buffered the request body; they replace the client's when the
	// script ends.
	bufferedTrailers bool
	// Streaming: streamed once bodyChunks() was called; chunk is the
	// piece the script has (chunkOut until it is given back);
	// chunksEnded at the end of the body.
	streamed, chunkOut, chunksEnded bool
	chunk                           []byte
	// headGone: a response script's bodyChunks() or trailers() let
	// bytes of the body through, and the response's head with the first.
	headGone bool
	// routeCleared reports that a header change already cleared the
	// route cache during this call.
	routeCleared bool
	reply        *reply
	// left is the time budget left when the script paused to wait.
	left time.Duration
	// aborted reports that the stream answered while the script waited
	// (stream timeout, client gone): the script is stopped.
	aborted bool
	// call numbers the calls of the handle: the objects it hands out are
	// stamped with their call's number (see fresh), so that one a script
	// kept in a global is refused on a later call, as Envoy refuses it.
	call callStamp
}

// callStamp is the value of the userdata the handle hands out: the number
// of the call they belong to.
type callStamp uint64

// newHandle makes the handle of v and the objects it hands out, with
// their methods.
func newHandle(v *vm) *handle {
	L := v.L
	h := &handle{budget: v.Budget}
	h.ud = newObject(L, h, "stream handle", map[string]glua.LGFunction{
		"headers":         h.headers,
		"body":            h.bodyMethod,
		"trailers":        h.trailersMethod,
		"bodyChunks":      h.bodyChunks,
		"filterContext":   h.filterContextMethod,
		"respond":         h.respond,
		"httpCall":        h.httpCall,
		"streamInfo":      h.object(&h.infoUD),
		"connection":      h.object(&h.connUD),
		"metadata":        h.object(&h.metaUD),
		"clearRouteCache": h.clearRoute,
		"base64Escape":    h.base64Escape,
		"logTrace":        h.log(func(c *filterConfig, m string) { c.log.V(2).Info(m) }),
		"logDebug":        h.log(func(c *filterConfig, m string) { c.log.V(1).Info(m) }),
		"logInfo":         h.log(func(c *filterConfig, m string) { c.log.Info(m) }),
		"logWarn":         h.log(func(c *filterConfig, m string) { logging.Warning(c.log, m) }),
		"logErr":          h.log(func(c *filterConfig, m string) { c.log.Error(nil, m) }),
		"logCritical":     h.log(func(c *filterConfig, m string) { logging.Critical(c.log, m) }),
	})
	h.headersUD = newHeaders(L, h)
	h.bodyUD = newBody(L, h)
	h.infoUD = newStreamInfo(L, h)
	h.dynUD = newDynamicMetadata(L, h)
	h.connUD = newConnection(L, h)
	h.sslUD = newSSL(L, h)
	h.metaUD = newRouteMetadata(L, h)
	h.trailersUD = newTrailers(L, h)
	h.chunkUD = newBuffer(L, h, func() []byte { return h.chunk }, func(_ *glua.LState, b []byte) { h.chunk = b })
	return h
}

// begin points the handle at a call's stream.
func (h *handle) begin(c *filterConfig, s httpfilter.Stream, response bool, w *bodyWait) {
	h.c, h.s, h.response, h.live, h.wait = c, s, response, true, w
	h.call++
}

// fresh returns the object *ud for the current call: *ud itself when it
// was handed out during this call, else a new userdata with the same
// methods, stamped with the call (the old one stays stale).
func (h *handle) fresh(L *glua.LState, ud **glua.LUserData) *glua.LUserData {
	if st, ok := (*ud).Value.(callStamp); ok && st == h.call {
		return *ud
	}
	n := L.NewUserData()
	n.Value, n.Metatable = h.call, (*ud).Metatable
	*ud = n
	return n
}

// clear forgets the stream once the call is over.
func (h *handle) clear() {
	*h = handle{
		ud: h.ud, headersUD: h.headersUD, bodyUD: h.bodyUD, infoUD: h.infoUD, dynUD: h.dynUD,
		connUD: h.connUD, sslUD: h.sslUD, metaUD: h.metaUD, trailersUD: h.trailersUD, chunkUD: h.chunkUD, budget: h.budget,
		call: h.call,
	}
}

// continued reports that a request script let the request's head go on
// to stream its body (bodyChunks(), trailers()), or that a response
// script's bodyChunks() or trailers() let bytes of the response's body
// (and so its head) through: the head can no longer change, and (on the
// request) the stream no longer waits for the script.
func (h *handle) continued() bool {
	if h.response {
		return h.headGone
	}
	return h.wait != nil && h.wait.streaming
}

// trailerEdit is the trailers a request script read after buffering the
// body, which go upstream in place of the client's; nil otherwise.
func (h *handle) trailerEdit() http.Header {
	if h.bufferedTrailers {
		return h.trailers
	}
	return nil
}

// check refuses a handle (or one of its objects) that a script kept and
// used after its call, as Envoy refuses objects used out of their scope.
func (h *handle) check(L *glua.LState) {
	stale := false
	if ud, ok := L.Get(1).(*glua.LUserData); ok {
		// A method called on an object of an earlier call (kept in a
		// global) while another call runs.
		st, stamped := ud.Value.(callStamp)
		stale = stamped && st != h.call
	}
	if !h.live || stale {
		L.RaiseError("object used outside of proper scope")
	}
	if h.aborted {
		// The stream is gone; a script that caught the error that
		// stopped it must not reach it again.
		L.RaiseError("the stream ended while the script waited")
	}
}

// object is a method that returns one of the handle's objects.
func (h *handle) object(ud **glua.LUserData) glua.LGFunction {
	return func(L *glua.LState) int {
		h.check(L)
		L.Push(h.fresh(L, ud))
		return 1
	}
}

// log is a log method: "script log: <message>" at its level, as Envoy
// writes it.
func (h *handle) log(write func(c *filterConfig, m string)) glua.LGFunction {
	return func(L *glua.LState) int {
		h.check(L)
		write(h.c, "script log: "+L.CheckString(2))
		return 0
	}
}

// clearRoute is clearRouteCache(): routing runs again for the request.
func (h *handle) clearRoute(L *glua.LState) int {
	h.check(L)
	if !h.response && !h.continued() {
		h.s.ClearRouteCache()
	}
	return 0
}

// base64Escape encodes a string in base64 (standard alphabet, padded).
func (h *handle) base64Escape(L *glua.LState) int {
	h.check(L)
	L.Push(glua.LString(base64.StdEncoding.EncodeToString([]byte(L.CheckString(2)))))
	return 1
}

// newObject makes a userdata of the named kind whose methods are
// methods; any other name a script looks up on it raises an error that
// names it, so that a script using a part of Envoy's API that Outrigger
// lacks fails clearly rather than calling nil.
func newObject(L *glua.LState, h *handle, kind string, methods map[string]glua.LGFunction) *glua.LUserData {
	mt := luavm.Metatable(L, kind, "Outrigger's Lua filter", methods)
	ud := L.NewUserData()
	ud.Value = h.call
	L.SetMetatable(ud, mt)
	return ud
}

// pause stops the clock of the script's time budget while it waits for
// the stream or a service; resume starts it again with the time left.
func (h *handle) pause() {
	h.left = h.budget.Left()
	h.budget.Stop()
}

// resume restarts the clock after pause.
func (h *handle) resume() { h.budget.Start(h.left) }

// abort stops the script when the stream answered while it waited.
func (h *handle) abort(L *glua.LState) {
	h.aborted = true
	L.RaiseError("the stream ended while the script waited")
}
