package lua

import (
	"sort"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

// The trailers object (handle:trailers()): the response's trailers, once
// its body has all arrived. Request trailers are not forwarded upstream
// by the connection manager, so a request script has none to see.

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

// trailersMethod is the handle's trailers(): on the response, after the
// whole body (it waits for it, as body() does), the trailers object, or
// nil when the response has none.
func (h *handle) trailersMethod(L *glua.LState) int {
	h.check(L)
	if !h.response {
		L.RaiseError("trailers() of a request is not supported by Outrigger (request trailers are not forwarded upstream)")
	}
	h.readBody(L)
	if len(h.trailers) == 0 {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(h.trailersUD)
	return 1
}
