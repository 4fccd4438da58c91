package lua

import (
	"strconv"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// reply is what respond() asked for: the filter sends it once the script
// has ended, and adds its headers when the reply passes back through the
// filter (EncodeHeaders), as the connection manager's local replies carry
// no headers of the filter's choosing.
type reply struct {
	status  int
	body    string
	headers [][2]string
	// contentType reports that the script set content-type (else the
	// local reply's text/plain is dropped: Envoy sends none).
	contentType bool
	applied     bool
}

// apply puts the reply's headers on the response.
func (r *reply) apply(h router.HeaderEditor) {
	r.applied = true
	if v, _ := h.Get("content-type"); !r.contentType && v == "text/plain" {
		// The local reply's own, which Envoy's respond() does not
		// send; a gRPC reply's or a local_reply_config format's stays.
		h.Del("content-type")
	}
	for i, kv := range r.headers {
		if kv[0] == "content-type" && r.firstContentType(i) {
			h.Set(kv[0], kv[1])
			continue
		}
		h.Add(kv[0], kv[1])
	}
}

// firstContentType reports whether headers[i] is the first content-type,
// which replaces the local reply's.
func (r *reply) firstContentType(i int) bool {
	for _, kv := range r.headers[:i] {
		if kv[0] == "content-type" {
			return false
		}
	}
	return true
}

// respond is the handle's respond(headers, body): it checks the headers
// (a string or a list of strings per name, :status between 200 and 599)
// and stops the script; the reply goes out when the script has ended.
func (h *handle) respond(L *glua.LState) int {
	h.check(L)
	if h.response {
		L.RaiseError("respond not currently supported in the response path")
	}
	if h.continued() {
		L.RaiseError("respond() cannot be called if headers have been continued")
	}
	t := L.CheckTable(2)
	body := ""
	if L.GetTop() >= 3 && L.Get(3) != glua.LNil {
		body = L.CheckString(3)
	}
	r := &reply{body: body}
	status := ""
	forEachHeader(L, t, func(name, value string) {
		switch {
		case name == ":status":
			status = value
		case name[0] == ':':
			// Other pseudo-headers have no place in a response.
		default:
			if name == "content-type" {
				r.contentType = true
			}
			r.headers = append(r.headers, [2]string{name, value})
		}
	})
	n, err := strconv.Atoi(status)
	if err != nil || n < 200 || n >= 600 {
		L.RaiseError(":status must be between 200-599")
	}
	r.status = n
	h.reply = r
	// Stop the script here, as Envoy's respond() yields for good.
	L.Error(glua.LString(stopMessage), 0)
	return 0
}

// stopMessage is the error that ends a script after respond().
const stopMessage = "respond() ended the script"

// forEachHeader calls fn with each name (lower case) and value of a
// headers table; a value may be a list of values. Names and values must
// be strings (numbers are converted) and valid in a header.
func forEachHeader(L *glua.LState, t *glua.LTable, fn func(name, value string)) {
	t.ForEach(func(k, v glua.LValue) {
		name := headerName(L, k)
		if vt, ok := v.(*glua.LTable); ok {
			n := vt.Len()
			for i := 1; i <= n; i++ {
				fn(name, headerValue(L, vt.RawGetInt(i)))
			}
			return
		}
		fn(name, headerValue(L, v))
	})
}
