package logging

import "strings"

// matchGlob reports whether name matches pattern, where '*' matches any run
// of characters (slashes included) and '?' matches one byte, as Envoy's
// fine-grain file matching does. It runs in O(len(pattern)*len(name)) at
// worst: on a mismatch it only ever backtracks to the latest '*'.
func matchGlob(pattern, name string) bool {
	p, n := 0, 0
	star, resume := -1, 0 // position after the latest '*', and where name resumes
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, resume = p+1, n
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case star >= 0:
			resume++
			p, n = star, resume
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// globRule is one fine-grain level update.
type globRule struct {
	pattern string
	isPath  bool // the pattern has a '/', so it is matched against the whole path
	level   Level
}

// matches applies Envoy's rule: a pattern with a slash matches the whole
// path; one without matches the base name's stem (the name up to its first
// dot, "server" for "pkg/proxy/server/server.go"). Outrigger also lets it
// match the whole base name, so "server.go" works too.
func (g globRule) matches(file string) bool {
	if g.isPath {
		return matchGlob(g.pattern, file)
	}
	base := baseName(file)
	stem := base
	if i := strings.IndexByte(stem, '.'); i >= 0 {
		stem = stem[:i]
	}
	return matchGlob(g.pattern, stem) || matchGlob(g.pattern, base)
}
