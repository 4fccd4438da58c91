package router

import (
	"fmt"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// ListStringMatch is a compiled ListStringMatcher, for the filters that
// select header names with one (ext_authz's and ext_proc's allowed and
// disallowed headers): a value matches when any pattern does.
type ListStringMatch []*StringMatch

// CompileListStringMatch compiles a ListStringMatcher; errors name the
// field below it ("patterns[0].safe_regex.regex: ...").
func CompileListStringMatch(l *matcherv3.ListStringMatcher) (ListStringMatch, error) {
	ms := make(ListStringMatch, 0, len(l.GetPatterns()))
	for i, p := range l.GetPatterns() {
		m, err := CompileStringMatch(p)
		if err != nil {
			return nil, fmt.Errorf("patterns[%d].%w", i, err)
		}
		ms = append(ms, &m)
	}
	return ms, nil
}

// Matches reports whether a pattern matches v.
func (l ListStringMatch) Matches(v string) bool {
	for _, m := range l {
		if m.Matches(v) {
			return true
		}
	}
	return false
}
