package apikeyauth

import (
	"errors"
	"strings"

	apikeyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// sourceKind is where a key source looks.
type sourceKind uint8

const (
	fromHeader sourceKind = iota
	fromQuery
	fromCookie
)

// keySource is one compiled KeySource: header wins over query, query over
// cookie, as Envoy reads the message.
type keySource struct {
	kind sourceKind
	// name is the header (lower case), query parameter or cookie name.
	name string
}

// compileKeySource compiles a KeySource, with Envoy's error for an empty one.
func compileKeySource(ks *apikeyv3.KeySource) (keySource, error) {
	switch {
	case ks.GetHeader() != "":
		return keySource{kind: fromHeader, name: lower(ks.GetHeader())}, nil
	case ks.GetQuery() != "":
		return keySource{kind: fromQuery, name: ks.GetQuery()}, nil
	case ks.GetCookie() != "":
		return keySource{kind: fromCookie, name: ks.GetCookie()}, nil
	}
	return keySource{}, errors.New("one of 'header'/'query'/'cookie' must be set")
}

// lower is the lower-case header name (Envoy's LowerCaseString).
func lower(s string) string { return strings.ToLower(s) }

// findKey is the key of the first source that has a non-empty one, "" when
// none has.
func findKey(s httpfilter.Stream, sources []keySource) string {
	for _, ks := range sources {
		if key := ks.get(s); key != "" {
			return key
		}
	}
	return ""
}

// get reads the source's key from the request: a header's first value
// without its "Bearer " prefix (case-sensitive, as Envoy), a query
// parameter's first value, percent-decoded, or a cookie's value.
func (ks keySource) get(s httpfilter.Stream) string {
	switch ks.kind {
	case fromHeader:
		v, ok := router.FirstField(s.RequestHeaders(), ks.name)
		if !ok {
			return ""
		}
		return strings.TrimPrefix(v, "Bearer ")
	case fromQuery:
		v, _ := router.QueryParam(s.Request().Path, ks.name)
		return v
	default:
		v, _ := router.CookieValue(s.RequestHeaders(), ks.name)
		return v
	}
}

// removeKey removes the key from every source, as hide_credentials asks:
// the header, every value of the query parameter (the other parameters
// stay as they were sent), the cookie from the cookie headers.
func removeKey(s httpfilter.Stream, sources []keySource) {
	for _, ks := range sources {
		switch ks.kind {
		case fromHeader:
			s.RequestHeaders().Del(ks.name)
		case fromQuery:
			if p, ok := withoutQueryParam(s.Request().Path, ks.name); ok {
				s.SetPath(p)
			}
		default:
			removeCookie(s.RequestHeaders(), ks.name)
		}
	}
}

// withoutQueryParam is path without the parameters whose decoded name is
// name; ok is false when it has none. A query left empty goes with its '?'.
func withoutQueryParam(path, name string) (string, bool) {
	base, q, found := strings.Cut(path, "?")
	if !found {
		return path, false
	}
	fragment := ""
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q, fragment = q[:i], q[i:]
	}
	kept := make([]string, 0, 4)
	removed := false
	for pair := range strings.SplitSeq(q, "&") {
		if _, match := router.QueryParam("?"+pair, name); match {
			removed = true
			continue
		}
		kept = append(kept, pair)
	}
	if !removed {
		return path, false
	}
	if len(kept) == 0 {
		return base + fragment, true
	}
	return base + "?" + strings.Join(kept, "&") + fragment, true
}

// removeCookie removes the cookie name from the request's cookie headers,
// as Envoy's removeCookieValue: the other cookies of a header stay, joined
// by "; ", and a header left without any goes.
func removeCookie(h router.HeaderEditor, name string) {
	var values []string
	if fields, ok := h.(router.HeaderFields); ok {
		for i := 0; ; i++ {
			v, ok := fields.Field("cookie", i)
			if !ok {
				break
			}
			values = append(values, v)
		}
	} else if v, ok := h.Get("cookie"); ok {
		values = append(values, v)
	}
	if len(values) == 0 {
		return
	}
	var out []string
	changed := false
	for _, v := range values {
		var kept []string
		for part := range strings.SplitSeq(v, ";") {
			cname, _, _ := strings.Cut(strings.TrimLeft(part, " "), "=")
			if cname == name {
				changed = true
				continue
			}
			kept = append(kept, strings.TrimLeft(part, " "))
		}
		if len(kept) > 0 {
			out = append(out, strings.Join(kept, "; "))
		}
	}
	if !changed {
		return
	}
	h.Del("cookie")
	for _, v := range out {
		h.Add("cookie", v)
	}
}
