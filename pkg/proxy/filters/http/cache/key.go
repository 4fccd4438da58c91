package cache

import (
	"slices"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// key is the lookup key of a request: scheme, host and path (query
// included), less what key_creator_params leaves out.
func (c *filterConfig) key(s httpfilter.Stream) string {
	r := s.Request()
	var b strings.Builder
	if !c.excludeScheme {
		b.WriteString(r.Scheme)
	}
	b.WriteByte(0)
	if !c.excludeHost {
		b.WriteString(r.Host)
	}
	b.WriteByte(0)
	path := r.Path
	if c.filterQueryInTheKey {
		path = c.keyPath(path)
	}
	b.WriteString(path)
	return b.String()
}

// keyPath is path with only the query parameters key_creator_params keeps:
// those query_parameters_included matches (all when it is empty) and
// query_parameters_excluded does not.
func (c *filterConfig) keyPath(path string) string {
	p, query, ok := strings.Cut(path, "?")
	if !ok {
		return path
	}
	var kept []string
	for _, param := range strings.Split(query, "&") {
		name, value, _ := strings.Cut(param, "=")
		if len(c.queryIncluded) > 0 && !anyMatches(c.queryIncluded, name, value) {
			continue
		}
		if anyMatches(c.queryExcluded, name, value) {
			continue
		}
		kept = append(kept, param)
	}
	if len(kept) == 0 {
		return p
	}
	return p + "?" + strings.Join(kept, "&")
}

// anyMatches reports whether one of ms matches the parameter.
func anyMatches(ms []queryMatcher, name, value string) bool {
	for i := range ms {
		if ms[i].matches(name, value) {
			return true
		}
	}
	return false
}

// varyNames are the header names a response's Vary lists, sorted, lower
// case and without duplicates; ok is false when the response may not be
// stored: Vary: *, or a name allowed_vary_headers does not allow.
func (c *filterConfig) varyNames(h headerGetter) (names []string, ok bool) {
	v, has := h.Get("vary")
	if !has || strings.TrimSpace(v) == "" {
		return nil, true
	}
	for _, n := range strings.Split(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if n == "*" || !c.varyAllowed(n) {
			return nil, false
		}
		// A copy: the header may share the connection's buffers.
		names = append(names, strings.Clone(n))
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

// varyAllowed reports whether allowed_vary_headers allows header name.
func (c *filterConfig) varyAllowed(name string) bool {
	for i := range c.varyAllowedHeaders {
		if c.varyAllowedHeaders[i].Matches(name) {
			return true
		}
	}
	return false
}

// varyKey is the key of the response, among those of base that vary on
// names, that the request selects: each name with all the request's
// values of it. ok is false when a name is no longer allowed.
func (c *filterConfig) varyKey(base string, names []string, s httpfilter.Stream) (string, bool) {
	var b strings.Builder
	b.WriteString(base)
	b.WriteString("\x00vary\n")
	for _, n := range names {
		if !c.varyAllowed(n) {
			return "", false
		}
		b.WriteString(n)
		b.WriteByte('\r')
		first := true
		s.RangeRequestHeaders(func(name, value string) bool {
			if name == n {
				if !first {
					b.WriteByte('\r')
				}
				b.WriteString(value)
				first = false
			}
			return true
		})
		b.WriteByte('\n')
	}
	return b.String(), true
}
