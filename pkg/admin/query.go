package admin

import "strings"

// Params holds the decoded parameters of one admin request. Like Envoy, a
// key given several times keeps only its first value, and a key given
// without "=" is present with an empty value (presence flags such as
// ?usedonly work that way).
type Params struct {
	names  []string          // distinct names, in first-seen order
	values map[string]string // first value of each name
}

// ParseQuery decodes an application/x-www-form-urlencoded string (a URL's raw
// query or a form body). Pairs are separated by '&'; '+' decodes to a space
// and %XX to its byte. It never fails: a malformed escape such as "%zz" is
// kept literally, as Envoy does, and a pair whose name is empty is dropped
// because no endpoint could use it.
func ParseQuery(raw string) Params {
	var p Params
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		p.add(decodeComponent(name), decodeComponent(value))
	}
	return p
}

// add records a parameter unless its name is empty or already present.
func (p *Params) add(name, value string) {
	if name == "" {
		return
	}
	if _, ok := p.values[name]; ok {
		return
	}
	if p.values == nil {
		p.values = make(map[string]string)
	}
	p.names = append(p.names, name)
	p.values[name] = value
}

// without returns a copy of p lacking the named parameter.
func (p Params) without(name string) Params {
	if !p.Has(name) {
		return p
	}
	var q Params
	for _, n := range p.names {
		if n != name {
			q.add(n, p.values[n])
		}
	}
	return q
}

// Lookup returns the first value of name and whether the name was given.
func (p Params) Lookup(name string) (string, bool) {
	v, ok := p.values[name]
	return v, ok
}

// Get returns the first value of name, or "" when it was not given.
func (p Params) Get(name string) string { return p.values[name] }

// Has reports whether name was given, whatever its value: presence flags are
// on even as ?usedonly=false.
func (p Params) Has(name string) bool {
	_, ok := p.values[name]
	return ok
}

// Names returns the distinct parameter names in the order they first appear.
func (p Params) Names() []string {
	return append([]string(nil), p.names...)
}

// Len returns the number of distinct parameter names.
func (p Params) Len() int { return len(p.names) }

// decodeComponent percent-decodes one name or value of a query string. It
// differs from url.QueryUnescape by never failing: invalid escapes are kept
// as they are, so a typo in one parameter cannot hide the others.
func decodeComponent(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
