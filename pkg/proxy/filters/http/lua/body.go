package lua

import (
	"net/http"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// The body object (handle:body()): the whole request or response body,
// buffered before the script goes on, as Envoy buffers it. setBytes
// replaces it: the message goes on with the new bytes (chunked, as the
// connection manager frames a body a filter changed).

// newBody makes the body object of h.
func newBody(L *glua.LState, h *handle) *glua.LUserData {
	return newBuffer(L, h, h.current, func(L *glua.LState, b []byte) {
		if !h.hasBody() || !h.bodyRead {
			L.RaiseError("setBytes: adding a body to a message without one is not supported by Outrigger")
		}
		h.newBody = b
	})
}

// newBuffer makes a buffer object (a body, a body chunk) whose bytes get
// returns and set replaces.
func newBuffer(L *glua.LState, h *handle, get func() []byte, set func(L *glua.LState, b []byte)) *glua.LUserData {
	return newObject(L, h, "buffer", map[string]glua.LGFunction{
		"length": func(L *glua.LState) int {
			h.check(L)
			L.Push(glua.LNumber(len(get())))
			return 1
		},
		// getBytes(index, length): length bytes from index (from 0).
		"getBytes": func(L *glua.LState) int {
			h.check(L)
			i, n := L.CheckInt(2), L.CheckInt(3)
			b := get()
			if i < 0 || n < 0 {
				L.RaiseError("index/length must be >= 0")
			}
			if i+n > len(b) {
				L.RaiseError("index + length must be <= buffer size")
			}
			L.Push(glua.LString(b[i : i+n]))
			return 1
		},
		"setBytes": func(L *glua.LState) int {
			h.check(L)
			data := L.CheckString(2)
			set(L, append(make([]byte, 0, len(data)), data...))
			return 0
		},
	})
}

// bodyMethod is the handle's body(always_wrap_body). On the request it
// buffers the request body (at most maxBody bytes; a longer one is
// answered 413 as Envoy's buffer limit answers it); on the response it
// waits for the whole response body (the head is held until the script
// ends). It returns the body object, or nil when there is no body,
// unless always_wrap_body.
func (h *handle) bodyMethod(L *glua.LState) int {
	h.check(L)
	alwaysWrap := false
	if L.GetTop() >= 2 {
		alwaysWrap = L.CheckBool(2)
	}
	h.readBody(L)
	if h.body == nil && !alwaysWrap {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(h.fresh(L, &h.bodyUD))
	return 1
}

// readBody waits for the whole body once per call: the request's,
// buffered by the stream, or the response's, from the filter's encoder
// (with its trailers).
func (h *handle) readBody(L *glua.LState) {
	if h.streamed {
		if h.chunksEnded {
			return
		}
		L.RaiseError("cannot call body() after body streaming has started")
	}
	if !h.bodyRead {
		h.bodyRead = true
		switch {
		case h.response && h.wait != nil:
			h.pause()
			h.wait.body = make(chan []byte, 1)
			close(h.wait.want)
			body, ok := <-h.wait.body
			if !ok {
				h.abort(L)
			}
			h.resume()
			h.body, h.trailers = body, h.wait.trailers
		case h.response:
			if _, has := h.s.ResponseBody(); has {
				// Only a script that names body runs where it can
				// wait (see EncodeHeaders); one that reached body()
				// another way cannot.
				L.RaiseError("body() of a response: call it by its name (the script must contain \"body\")")
			}
		case h.hasBody():
			h.pause()
			body, _, ok := h.s.BufferRequestBody(maxBody, false)
			if !ok {
				// The stream answered (413, 408, 400) or the client
				// went away.
				h.abort(L)
			}
			h.resume()
			h.body = body
			if body == nil {
				h.body = []byte{}
			}
		}
	}
}

// hasBody reports whether the call's message has a body the script can
// read (and replace).
func (h *handle) hasBody() bool {
	if h.response {
		return h.wait != nil
	}
	_, has := h.s.RequestBody()
	return has
}

// current is the body as the script sees it: what setBytes put, else
// what was received.
func (h *handle) current() []byte {
	if h.newBody != nil {
		return h.newBody
	}
	return h.body
}

// replacedBody is the request body a script replaced (body not nil: the
// received bytes are dropped, the script's are sent at the end), or
// whose trailers it changed after buffering the body (trailers not nil:
// they replace the client's).
type replacedBody struct {
	body     []byte
	trailers http.Header
}

var (
	_ httpfilter.DataDecoder    = (*replacedBody)(nil)
	_ httpfilter.TrailerDecoder = (*replacedBody)(nil)
)

// DecodeData implements httpfilter.DataDecoder.
func (r *replacedBody) DecodeData(p []byte) ([]byte, error) {
	if r.body != nil {
		return nil, nil
	}
	return p, nil
}

// DecodeEnd implements httpfilter.DataDecoder.
func (r *replacedBody) DecodeEnd() ([]byte, error) { return r.body, nil }

// DecodeTrailers implements httpfilter.TrailerDecoder.
func (r *replacedBody) DecodeTrailers(t http.Header) http.Header {
	if r.trailers != nil {
		return r.trailers
	}
	return t
}
