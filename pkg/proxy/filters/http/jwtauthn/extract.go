package jwtauthn

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// locKind is where a token is looked for.
type locKind uint8

const (
	locHeader locKind = iota
	locParam
	locCookie
)

// location is one place tokens are extracted from, shared by the
// providers that name it; issuers are theirs (anyIssuer when one of them
// sets none).
type location struct {
	kind locKind
	// name is the header (lower case), query parameter or cookie name.
	name string
	// prefix is a header's value_prefix.
	prefix    string
	issuers   map[string]bool
	anyIssuer bool
}

// issuerAllowed reports whether a token found here may carry iss.
func (l *location) issuerAllowed(iss string) bool { return l.anyIssuer || l.issuers[iss] }

// extractor is the locations of one provider, or of all of them.
type extractor struct {
	locs []*location
}

// found is a token and where it was found.
type found struct {
	raw string
	loc *location
}

// add adds a location for a provider with issuer iss, merging it with an
// equal one.
func (e *extractor) add(kind locKind, name, prefix, iss string) {
	var l *location
	for _, o := range e.locs {
		if o.kind == kind && o.name == name && o.prefix == prefix {
			l = o
			break
		}
	}
	if l == nil {
		l = &location{kind: kind, name: name, prefix: prefix, issuers: map[string]bool{}}
		e.locs = append(e.locs, l)
	}
	if iss == "" {
		l.anyIssuer = true
	} else {
		l.issuers[iss] = true
	}
}

// extract finds the request's tokens: headers, then query parameters,
// then cookies, as Envoy's extractor orders them.
func (e *extractor) extract(s httpfilter.Stream) []found {
	var out []found
	var query url.Values
	var cookies []*http.Cookie
	cookiesRead := false
	h := s.RequestHeaders()
	for _, l := range e.locs {
		switch l.kind {
		case locHeader:
			v, ok := h.Get(l.name)
			if !ok {
				continue
			}
			if l.prefix != "" {
				i := strings.Index(v, l.prefix)
				if i < 0 {
					continue
				}
				v = tokenChars(v[i+len(l.prefix):])
			}
			if v != "" {
				out = append(out, found{raw: v, loc: l})
			}
		case locParam:
			if query == nil {
				_, q, _ := strings.Cut(s.Request().Path, "?")
				q, _, _ = strings.Cut(q, "#")
				query, _ = url.ParseQuery(q)
				if query == nil {
					query = url.Values{}
				}
			}
			if v := query.Get(l.name); v != "" {
				out = append(out, found{raw: v, loc: l})
			}
		case locCookie:
			if !cookiesRead {
				cookiesRead = true
				if v, ok := h.Get("cookie"); ok {
					cookies, _ = http.ParseCookie(v)
				}
			}
			for _, c := range cookies {
				if c.Name == l.name && c.Value != "" {
					out = append(out, found{raw: c.Value, loc: l})
					break
				}
			}
		}
	}
	return out
}

// tokenChars is the token at the start of v: the base64url characters and
// dots (what follows the prefix up to the first other character).
func tokenChars(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '=') {
			return v[:i]
		}
	}
	return v
}

// remove takes a forwarded token out of the request: the header it came
// in (query parameters and cookies stay, as in Envoy).
func (l *location) remove(s httpfilter.Stream) {
	if l.kind == locHeader {
		s.RequestHeaders().Del(l.name)
	}
}
