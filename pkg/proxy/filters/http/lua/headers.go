package lua

import (
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// The header object (handle:headers()): the request's headers in
// envoy_on_request, the response's in envoy_on_response, pseudo-headers
// included (:authority, :path, :method, :scheme; :status).

// newHeaders makes the header object of h.
func newHeaders(L *glua.LState, h *handle) *glua.LUserData {
	return newObject(L, h, "header map", map[string]glua.LGFunction{
		"get":          h.headerGet,
		"getAtIndex":   h.headerGetAtIndex,
		"getNumValues": h.headerGetNumValues,
		"add":          h.headerAdd,
		"replace":      h.headerReplace,
		"remove":       h.headerRemove,
		"pairs":        h.headerPairs,
	})
}

// headers is the handle's headers().
func (h *handle) headers(L *glua.LState) int {
	h.check(L)
	L.Push(h.fresh(L, &h.headersUD))
	return 1
}

// editor is the header map of the call's direction.
func (h *handle) editor() router.HeaderEditor {
	if h.response {
		return h.s.ResponseHeaders()
	}
	return h.s.RequestHeaders()
}

// pseudo returns a pseudo-header's value; ok is false for a name that is
// not one of the direction's pseudo-headers.
func (h *handle) pseudo(name string) (value string, ok bool) {
	if h.response {
		if name == ":status" {
			return strconv.Itoa(h.s.ResponseStatus()), true
		}
		return "", false
	}
	r := h.s.Request()
	switch name {
	case ":authority":
		return r.Host, true
	case ":path":
		return r.Path, true
	case ":method":
		return r.Method, true
	case ":scheme":
		return r.Scheme, true
	}
	return "", false
}

// headerGet is get(name): every value of the header joined by ",", nil
// when there is none.
func (h *handle) headerGet(L *glua.LState) int {
	h.check(L)
	name := strings.ToLower(L.CheckString(2))
	v, ok := h.pseudo(name)
	if !ok {
		v, ok = h.editor().Get(name)
	} else {
		ok = v != ""
	}
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(glua.LString(v))
	return 1
}

// field returns the i-th value (from 0) of a header.
func (h *handle) field(name string, i int) (string, bool) {
	if v, ok := h.pseudo(name); ok {
		return v, i == 0 && v != ""
	}
	if f, ok := h.editor().(router.HeaderFields); ok {
		return f.Field(name, i)
	}
	if h.response {
		v, ok := h.editor().Get(name)
		return v, ok && i == 0
	}
	var (
		value string
		found bool
	)
	h.s.RangeRequestHeaders(func(n, v string) bool {
		if n == name {
			if i == 0 {
				value, found = v, true
				return false
			}
			i--
		}
		return true
	})
	return value, found
}

// headerGetAtIndex is getAtIndex(name, index): one value of a header of
// several, nil past the last.
func (h *handle) headerGetAtIndex(L *glua.LState) int {
	h.check(L)
	name := strings.ToLower(L.CheckString(2))
	i := L.CheckInt(3)
	if i < 0 {
		L.ArgError(3, "index must be greater than or equal to 0")
	}
	v, ok := h.field(name, i)
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(glua.LString(v))
	return 1
}

// headerGetNumValues is getNumValues(name): how many values a header has.
func (h *handle) headerGetNumValues(L *glua.LState) int {
	h.check(L)
	name := strings.ToLower(L.CheckString(2))
	n := 0
	for {
		if _, ok := h.field(name, n); !ok {
			break
		}
		n++
	}
	L.Push(glua.LNumber(n))
	return 1
}

// modified notes a change of the request headers: routing runs again
// (clear_route_cache), as in Envoy.
func (h *handle) modified() {
	if !h.response && h.c.clearRouteCache && !h.routeCleared {
		h.routeCleared = true
		h.s.ClearRouteCache()
	}
}

// checkModifiable refuses a change of the request's head once it went on
// (a script streaming the body), as Envoy does.
func (h *handle) checkModifiable(L *glua.LState) {
	h.check(L)
	if h.continued() {
		L.RaiseError("header map can no longer be modified")
	}
}

// headerAdd is add(name, value).
func (h *handle) headerAdd(L *glua.LState) int {
	h.checkModifiable(L)
	name := headerName(L, L.Get(2))
	value := headerValue(L, L.Get(3))
	if _, ok := h.pseudo(name); ok || name[0] == ':' {
		L.RaiseError("add(%q): adding a pseudo-header is not supported by Outrigger", name)
	}
	h.editor().Add(name, value)
	h.modified()
	return 0
}

// headerReplace is replace(name, value): the header's values give way to
// value (it is added when absent). Of the pseudo-headers, only the
// request's :path may be replaced.
func (h *handle) headerReplace(L *glua.LState) int {
	h.checkModifiable(L)
	name := headerName(L, L.Get(2))
	value := headerValue(L, L.Get(3))
	if name[0] == ':' {
		if h.response || name != ":path" {
			L.RaiseError("replace(%q): changing this pseudo-header is not supported by Outrigger", name)
		}
		if value == "" || value[0] != '/' {
			L.ArgError(3, ":path must start with /")
		}
		h.s.SetPath(value)
		h.modified()
		return 0
	}
	h.editor().Set(name, value)
	h.modified()
	return 0
}

// headerRemove is remove(name).
func (h *handle) headerRemove(L *glua.LState) int {
	h.checkModifiable(L)
	name := headerName(L, L.Get(2))
	if name[0] == ':' {
		L.RaiseError("remove(%q): removing a pseudo-header is not supported by Outrigger", name)
	}
	h.editor().Del(name)
	h.modified()
	return 0
}

// headerPairs is pairs(): an iterator over the headers, pseudo-headers
// first, each value of a header apart. It iterates over a copy, so the
// script may change the headers meanwhile.
func (h *handle) headerPairs(L *glua.LState) int {
	h.check(L)
	var kv [][2]string
	names := [...]string{":authority", ":path", ":method", ":scheme"}
	if h.response {
		names = [...]string{":status", "", "", ""}
	}
	for _, n := range names {
		if v, ok := h.pseudo(n); ok && v != "" {
			kv = append(kv, [2]string{n, v})
		}
	}
	collect := func(name, value string) bool {
		kv = append(kv, [2]string{name, value})
		return true
	}
	if !h.response {
		h.s.RangeRequestHeaders(collect)
	} else if r, ok := h.editor().(interface {
		Range(fn func(name, value string) bool)
	}); ok {
		r.Range(collect)
	}
	L.Push(iterator(L, len(kv), func(i int) (glua.LValue, glua.LValue) {
		return glua.LString(kv[i][0]), glua.LString(kv[i][1])
	}))
	return 1
}

// headerName checks a header name argument: a non-empty string (or
// number) of token characters, a leading ':' allowed; it comes back in
// lower case.
func headerName(L *glua.LState, v glua.LValue) string {
	if !glua.LVCanConvToString(v) {
		L.RaiseError("header name must be a string, not %s", v.Type().String())
	}
	name := strings.ToLower(glua.LVAsString(v))
	if name == "" {
		L.RaiseError("header name must not be empty")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == ':' && i == 0 {
			continue
		}
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			L.RaiseError("header name %q has an invalid character", name)
		}
	}
	return name
}

// headerValue checks a header value argument: a string (or number)
// without CR, LF or NUL, which would split the message.
func headerValue(L *glua.LState, v glua.LValue) string {
	if !glua.LVCanConvToString(v) {
		L.RaiseError("header value must be a string, not %s", v.Type().String())
	}
	value := glua.LVAsString(v)
	if strings.ContainsAny(value, "\r\n\x00") {
		L.RaiseError("header value must not contain CR, LF or NUL")
	}
	return value
}
