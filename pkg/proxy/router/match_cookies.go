package router

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// cookieMatch is a compiled CookieMatcher: the named cookie's value
// (Envoy's parseCookieValue, the first of that name) matches; an absent
// cookie does not, and invert flips the result, absence included.
type cookieMatch struct {
	name   string
	str    StringMatch
	invert bool
}

// compileCookies reads RouteMatch.cookies into rm. Errors name the field
// below the route match.
func compileCookies(m *routev3.RouteMatch, rm *routeMatch) error {
	for i, c := range m.GetCookies() {
		sm, err := CompileStringMatch(c.GetStringMatch())
		if err != nil {
			return fmt.Errorf("cookies[%d].string_match.%w", i, err)
		}
		rm.cookies = append(rm.cookies, cookieMatch{name: c.GetName(), str: sm, invert: c.GetInvertMatch()})
	}
	return nil
}

// matchesCookies reports whether every cookie matcher accepts the request.
func (m *routeMatch) matchesCookies(req *Request) bool {
	for i := range m.cookies {
		c := &m.cookies[i]
		v, ok := cookieValue(req, c.name)
		if (ok && c.str.Matches(v)) == c.invert {
			return false
		}
	}
	return true
}
