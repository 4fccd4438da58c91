package router

import (
	"math/rand/v2"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// HeaderGetter reads one request header by its lower-case name; several
// values come back joined by "," (Envoy matches headers on the joined
// value). It is the same interface the access-log formatter reads, so one
// implementation serves both.
type HeaderGetter = accesslog.HeaderGetter

// HeaderEditor is a mutable header map, as the connection manager keeps
// it. Names are lower case.
type HeaderEditor interface {
	HeaderGetter
	// Set replaces every value of the header with value.
	Set(name, value string)
	// Add appends one more value of the header.
	Add(name, value string)
	// Del removes every value of the header.
	Del(name string)
}

// Request is what routing looks at. The connection manager fills it from
// the decoded request without allocating: the strings are the ones it
// already holds.
type Request struct {
	// Host is the :authority (Host) header, port included when sent.
	Host string
	// Path is the :path as received, query string included.
	Path string
	// Method is the :method.
	Method string
	// Scheme is the :scheme ("http" or "https"), used by redirects when
	// there is no x-forwarded-proto header.
	Scheme string
	// Headers are the other request headers; nil means none.
	Headers HeaderGetter
	// Runtime overrides runtime_fraction shares; nil reads none.
	Runtime runtime.Reader
	// Random is the request's random value, drawn once per request:
	// every runtime_fraction of the table is decided with it, as
	// Envoy decides them with the stream's id. Read it with
	// RandomValue, which draws it first when DrawRandom is set.
	Random uint64
	// DrawRandom says Random is not drawn yet: RandomValue draws it at
	// its first read, so that a request no runtime_fraction looks at
	// draws none. A copy of the request made before the draw would
	// draw a value of its own: draw it (RandomValue) before copying.
	DrawRandom bool
	// DynamicMetadata is the stream's dynamic metadata when the route is
	// matched, for dynamic_metadata matchers (nil: none).
	DynamicMetadata *corev3.Metadata
	// FilterState is the stream's filter state when the route is matched,
	// for filter_state matchers (nil: none).
	FilterState map[string]accesslog.FilterStateObject
	// ConnFilterState is the connection's filter state, which a
	// filter_state matcher reads when FilterState has no object under its
	// key, as Envoy's filter state reads through to its parent (nil:
	// none).
	ConnFilterState accesslog.FilterStateReader
	// TLS is the downstream connection's TLS, which tls_context matchers
	// read; nil on a plaintext connection.
	TLS *accesslog.TLSInfo

	// memo is the last regular header read while MatchRequest runs
	// (routes often test the same header one after another, as canary
	// routes do); off otherwise, since filters edit headers between
	// matches.
	memo headerMemo
}

// RandomValue is the request's random value (Random), drawn from
// math/rand/v2's runtime source at the first read when DrawRandom is set,
// the same value at every later read.
func (r *Request) RandomValue() uint64 {
	if r.DrawRandom {
		r.Random, r.DrawRandom = rand.Uint64(), false
	}
	return r.Random
}

// headerMemo is a header look-up kept for the next one: that of the
// header numbered id (see numberHeaderNames).
type headerMemo struct {
	on, ok bool
	id     int
	value  string
}

// numberHeaderNames numbers the regular header names that routes' header
// matchers read, the same number for the same name across the table
// (ids, from 1), so that the memo of MatchRequest compares numbers; and
// gives each route the first header it cannot match without. It reports
// whether any route reads a regular header.
func numberHeaderNames(routes []*Route, ids map[string]int) bool {
	reads := false
	for _, r := range routes {
		for i := range r.match.headers.matchers {
			hm := &r.match.headers.matchers[i]
			if hm.pseudo {
				continue
			}
			id, ok := ids[hm.name]
			if !ok {
				id = len(ids) + 1
				ids[hm.name] = id
			}
			hm.id, reads = id, true
			if r.match.required == 0 && hm.failsWhenAbsent() {
				r.match.required, r.match.requiredName = id, hm.name
			}
		}
	}
	return reads
}

// header reads a request header, answering the pseudo-headers from the
// request's fields so that header matchers can name them.
func (r *Request) header(name string) (string, bool) {
	switch name {
	case ":authority", "host":
		return r.Host, r.Host != ""
	case ":path":
		return r.Path, r.Path != ""
	case ":method":
		return r.Method, r.Method != ""
	case ":scheme":
		return r.Scheme, r.Scheme != ""
	}
	return r.regularHeader(name, 0)
}

// Header reads a request header as header matchers see it: the
// pseudo-headers (:path, :method, :authority, :scheme) from the request's
// fields, the others from its Headers, several values joined by ",".
func (r *Request) Header(name string) (string, bool) { return r.header(name) }

// isPseudoHeader reports whether Request.header answers name from the
// request's fields rather than its Headers.
func isPseudoHeader(name string) bool {
	switch name {
	case ":authority", "host", ":path", ":method", ":scheme":
		return true
	}
	return false
}

// regularHeader reads a header that is not a pseudo-header; id is its
// number in the table (0 for none). MatchRequest's memo answers a header
// it just read.
func (r *Request) regularHeader(name string, id int) (string, bool) {
	if r.Headers == nil {
		return "", false
	}
	if !r.memo.on || id == 0 {
		return r.Headers.Get(name)
	}
	if r.memo.id != id {
		r.memo.value, r.memo.ok = r.Headers.Get(name)
		r.memo.id = id
	}
	return r.memo.value, r.memo.ok
}

// pathOnly is the path without its query string and fragment.
func pathOnly(path string) string {
	for i := 0; i < len(path); i++ {
		if path[i] == '?' || path[i] == '#' {
			return path[:i]
		}
	}
	return path
}

// query is the query string after '?', without the fragment.
func query(path string) string {
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '#':
			return ""
		case '?':
			q := path[i+1:]
			for j := 0; j < len(q); j++ {
				if q[j] == '#' {
					return q[:j]
				}
			}
			return q
		}
	}
	return ""
}
