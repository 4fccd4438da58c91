package router

import "strings"

// routeIndex narrows a virtual host's routes to those that can match a
// path, keeping Envoy's first-match order: a request gets the route the
// linear scan of every route would give it, but routes whose path matcher
// cannot accept the request's first path segment are not tried.
//
// A route is keyed by a first segment (see firstSegment) when its path
// matcher only accepts paths of that first segment: an exact path, a
// case-sensitive prefix or path_separated_prefix holding a '/' after its
// first byte, a path_separated_prefix (whose match ends at a '/' or the
// end), a regex whose literal prefix holds one, and a uri template whose
// first segment is a literal. Every other route (a short prefix such as
// "/" or "/api", case-insensitive matchers,
// regexes without such a literal prefix, connect_matcher) may accept any
// path and is tried for every request, in its place.
type routeIndex struct {
	// keyed are the keyed routes by first segment, each list in route
	// order.
	keyed map[string][]indexedRoute
	// others are the routes tried for every path, in route order.
	others []indexedRoute
	// keyLengths has bit len(key)%64 set for each key of keyed: a path
	// whose first segment has none of these lengths skips the map.
	keyLengths uint64
}

// indexedRoute is a route and its position in the virtual host's list,
// which orders the merge of a keyed list with others.
type indexedRoute struct {
	pos   int
	route *Route
}

// buildRouteIndex indexes routes; it returns nil when no route is keyed,
// where the plain scan is as cheap. With pathParams (the table cuts
// paths at ';' before matching) uri templates, which match the whole
// path, are not keyed: the cut path's first segment is not theirs.
func buildRouteIndex(routes []*Route, pathParams bool) *routeIndex {
	ix := &routeIndex{keyed: map[string][]indexedRoute{}}
	for i, r := range routes {
		ir := indexedRoute{pos: i, route: r}
		if key, ok := r.match.segmentKey(); ok && !(pathParams && r.match.kind == pathTemplate) {
			ix.keyed[key] = append(ix.keyed[key], ir)
			ix.keyLengths |= 1 << (len(key) & 63)
			continue
		}
		ix.others = append(ix.others, ir)
	}
	if len(ix.keyed) == 0 {
		return nil
	}
	return ix
}

// match is the first route, in route order, that accepts req; path is
// req.Path without its query string.
func (ix *routeIndex) match(req *Request, path string) *Route {
	others := ix.others
	var keyed []indexedRoute
	if seg := firstSegment(path); ix.keyLengths&(1<<(len(seg)&63)) != 0 {
		keyed = ix.keyed[seg]
	}
	if len(keyed) == 0 {
		for i := range others {
			if others[i].route.match.matchesPath(req, path) {
				return others[i].route
			}
		}
		return nil
	}
	for len(keyed) > 0 || len(others) > 0 {
		var r *Route
		if len(others) == 0 || (len(keyed) > 0 && keyed[0].pos < others[0].pos) {
			r, keyed = keyed[0].route, keyed[1:]
		} else {
			r, others = others[0].route, others[1:]
		}
		if r.match.matchesPath(req, path) {
			return r
		}
	}
	return nil
}

// segmentKey is the first segment every path the matcher accepts has, and
// whether there is one.
func (m *routeMatch) segmentKey() (string, bool) {
	switch m.kind {
	case pathExact:
		if m.caseSensitive {
			return firstSegment(m.value), true
		}
	case pathPrefix:
		if m.caseSensitive {
			return prefixSegment(m.value)
		}
	case pathSeparatedPrefix:
		// The path is the prefix, or the prefix and a '/': when the
		// prefix holds no '/' after its first byte, it is the segment.
		if m.caseSensitive && m.value != "" {
			return firstSegment(m.value), true
		}
	case pathRegex:
		// The regex is anchored at the start of the path, so every
		// match begins with its literal prefix (which Go computes
		// without case folding).
		lit, _ := m.re.LiteralPrefix()
		return prefixSegment(lit)
	case pathTemplate:
		// A template whose first segment is a literal matches paths of
		// that first segment only.
		return m.tmpl.literal, m.tmpl.literal != ""
	}
	return "", false
}

// prefixSegment is the first segment of every path that starts with
// prefix: known when prefix holds a '/' after its first byte.
func prefixSegment(prefix string) (string, bool) {
	if len(prefix) < 2 || strings.IndexByte(prefix[1:], '/') < 0 {
		return "", false
	}
	return firstSegment(prefix), true
}

// firstSegment is path up to its second '/' (the first one after its
// first byte), or all of it: "/api" for "/api/v1/users", "/" for "/".
func firstSegment(path string) string {
	if len(path) > 1 {
		if i := strings.IndexByte(path[1:], '/'); i >= 0 {
			return path[:i+1]
		}
	}
	return path
}
