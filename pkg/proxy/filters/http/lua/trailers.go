package lua

import (
	"sort"
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// The trailers object (handle:trailers()): the message's trailers, once
// its body has all arrived; the script's changes go on with them.

// newTrailers makes the trailers object of h.
func newTrailers(L *glua.LState, h *handle) *glua.LUserData {
	name := func(L *glua.LState) string { return headerName(L, L.Get(2)) }
	return newObject(L, h, "trailers", map[string]glua.LGFunction{
		"get": func(L *glua.LState) int {
			h.check(L)
			vs := h.trailers.Values(name(L))
			if len(vs) == 0 {
				L.Push(glua.LNil)
				return 1
			}
			L.Push(glua.LString(strings.Join(vs, ",")))
			return 1
		},
		"getAtIndex": func(L *glua.LState) int {
			h.check(L)
			vs := h.trailers.Values(name(L))
			i := L.CheckInt(3)
			if i < 0 || i >= len(vs) {
				L.Push(glua.LNil)
				return 1
			}
			L.Push(glua.LString(vs[i]))
			return 1
		},
		"getNumValues": func(L *glua.LState) int {
			h.check(L)
			L.Push(glua.LNumber(len(h.trailers.Values(name(L)))))
			return 1
		},
		"add": func(L *glua.LState) int {
			h.check(L)
			h.trailers.Add(name(L), headerValue(L, L.Get(3)))
			return 0
		},
		"replace": func(L *glua.LState) int {
			h.check(L)
			h.trailers.Set(name(L), headerValue(L, L.Get(3)))
			return 0
		},
		"remove": func(L *glua.LState) int {
			h.check(L)
			h.trailers.Del(name(L))
			return 0
		},
		"pairs": func(L *glua.LState) int {
			h.check(L)
			var kv [][2]string
			keys := make([]string, 0, len(h.trailers))
			for k := range h.trailers {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				for _, v := range h.trailers[k] {
					kv = append(kv, [2]string{strings.ToLower(k), v})
				}
			}
			L.Push(iterator(L, len(kv), func(i int) (glua.LValue, glua.LValue) {
				return glua.LString(kv[i][0]), glua.LString(kv[i][1])
			}))
			return 1
		},
	})
}

// trailersMethod is the handle's trailers(): the trailers object once
// the whole body has arrived, or nil when the message has none. It lets
// the body go on unbuffered while it waits (the message's head goes on
// then, as in Envoy), unless body() or bodyChunks() already read it.
func (h *handle) trailersMethod(L *glua.LState) int {
	h.check(L)
	if h.response {
		h.readResponseTrailers(L)
	} else {
		h.readRequestTrailers(L)
	}
	if len(h.trailers) == 0 {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(h.fresh(L, &h.trailersUD))
	return 1
}

// readResponseTrailers gets the response's trailers into h.trailers: the
// pieces of the body pass as they arrive (the one the script holds from
// bodyChunks() too) until the end, and the head leaves with the first
// bytes, so the headers can no longer change once they passed, as in
// Envoy (awaitChunk).
func (h *handle) readResponseTrailers(L *glua.LState) {
	switch {
	case h.chunksEnded, h.bodyRead && !h.streamed:
		// Already read: body() read the trailers with the body.
	case !h.canStream(L, "trailers"):
		// No body, no trailers.
	default:
		h.bodyRead, h.streamed = true, true
		for h.awaitChunk(L) {
		}
	}
}

// readRequestTrailers gets the request's trailers into h.trailers.
func (h *handle) readRequestTrailers(L *glua.LState) {
	switch {
	case h.chunksEnded || h.bufferedTrailers:
		// Already read.
	case h.bodyRead && !h.streamed:
		// body() buffered the whole body: the trailers arrived with
		// its end.
		if src, ok := h.s.(httpfilter.RequestTrailerSource); ok {
			h.trailers = src.BufferedRequestTrailers().Clone()
			h.bufferedTrailers = h.trailers != nil
		}
	case !h.canStream(L, "trailers"):
		// No body, no trailers.
	default:
		// Let the pieces go on as they are (the one the script holds
		// from bodyChunks() too) until the end.
		h.bodyRead, h.streamed = true, true
		for h.awaitChunk(L) {
		}
	}
}
