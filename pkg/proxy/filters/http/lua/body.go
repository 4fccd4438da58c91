package lua

import (
	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// The body object (handle:body()): the whole request body, buffered
// before the script goes on, as Envoy buffers it. setBytes replaces it:
// the request goes upstream with the new bytes (chunked, as the
// connection manager frames a body a filter changed).

// newBody makes the body object of h.
func newBody(L *glua.LState, h *handle) *glua.LUserData {
	return newObject(L, h, "buffer", map[string]glua.LGFunction{
		"length":   h.bodyLength,
		"getBytes": h.bodyGetBytes,
		"setBytes": h.bodySetBytes,
	})
}

// bodyMethod is the handle's body(always_wrap_body): it buffers the
// request body (at most maxBody bytes; a longer one is answered 413 as
// Envoy's buffer limit answers it) and returns the body object, or nil
// when the request has no body, unless always_wrap_body.
func (h *handle) bodyMethod(L *glua.LState) int {
	h.check(L)
	alwaysWrap := false
	if L.GetTop() >= 2 {
		alwaysWrap = L.CheckBool(2)
	}
	if h.response {
		L.RaiseError("body() in envoy_on_response is not supported by Outrigger (the response head is sent before its body)")
	}
	if !h.bodyRead {
		h.bodyRead = true
		if _, has := h.s.RequestBody(); has {
			h.pause()
			body, _, ok := h.s.BufferRequestBody(maxBody, false)
			if !ok {
				// The stream answered (413, 408, 400) or the client
				// went away.
				h.abort(L)
			}
			h.resume()
			h.body = body
		}
	}
	if h.body == nil && h.newBody == nil && !alwaysWrap {
		if _, has := h.s.RequestBody(); !has {
			L.Push(glua.LNil)
			return 1
		}
	}
	L.Push(h.bodyUD)
	return 1
}

// current is the body as the script sees it: what setBytes put, else
// what was received.
func (h *handle) current() []byte {
	if h.newBody != nil {
		return h.newBody
	}
	return h.body
}

// bodyLength is length().
func (h *handle) bodyLength(L *glua.LState) int {
	h.check(L)
	L.Push(glua.LNumber(len(h.current())))
	return 1
}

// bodyGetBytes is getBytes(index, length): length bytes from index (from
// 0).
func (h *handle) bodyGetBytes(L *glua.LState) int {
	h.check(L)
	i, n := L.CheckInt(2), L.CheckInt(3)
	b := h.current()
	if i < 0 || n < 0 {
		L.RaiseError("index/length must be >= 0")
	}
	if i+n > len(b) {
		L.RaiseError("index + length must be <= buffer size")
	}
	L.Push(glua.LString(b[i : i+n]))
	return 1
}

// bodySetBytes is setBytes(data): the request body becomes data.
func (h *handle) bodySetBytes(L *glua.LState) int {
	h.check(L)
	data := L.CheckString(2)
	if _, has := h.s.RequestBody(); !has {
		L.RaiseError("setBytes: adding a body to a request without one is not supported by Outrigger")
	}
	h.newBody = append(make([]byte, 0, len(data)), data...)
	return 0
}

// replacedBody is the request body a script replaced: the received bytes
// are dropped, the script's are sent at the end.
type replacedBody struct {
	body []byte
}

var _ httpfilter.DataDecoder = (*replacedBody)(nil)

// DecodeData implements httpfilter.DataDecoder.
func (*replacedBody) DecodeData([]byte) ([]byte, error) { return nil, nil }

// DecodeEnd implements httpfilter.DataDecoder.
func (r *replacedBody) DecodeEnd() ([]byte, error) { return r.body, nil }
