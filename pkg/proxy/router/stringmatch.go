package router

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	strlua "github.com/outrigger-dev/outrigger/pkg/proxy/stringmatcher/lua"
)

// stringKind is the comparison of a stringMatcher.
type stringKind uint8

const (
	strExact stringKind = iota
	strPrefix
	strSuffix
	strContains
	strRegex
	strCustom
)

// stringMatcher is a compiled StringMatcher. With ignoreCase, the pattern
// is stored in lower case and compared with ASCII case folding, as Envoy
// does.
type stringMatcher struct {
	kind       stringKind
	pattern    string
	ignoreCase bool
	re         *regexp.Regexp
	// custom is the extension of a custom pattern (the Lua matcher).
	custom *strlua.Matcher
}

// compileStringMatcher compiles a StringMatcher; errors name the field
// below it.
func compileStringMatcher(m *matcherv3.StringMatcher) (stringMatcher, error) {
	sm := stringMatcher{ignoreCase: m.GetIgnoreCase()}
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		sm.kind, sm.pattern = strExact, p.Exact
	case *matcherv3.StringMatcher_Prefix:
		sm.kind, sm.pattern = strPrefix, p.Prefix
	case *matcherv3.StringMatcher_Suffix:
		sm.kind, sm.pattern = strSuffix, p.Suffix
	case *matcherv3.StringMatcher_Contains:
		sm.kind, sm.pattern = strContains, p.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		re, err := compileRegex(p.SafeRegex)
		if err != nil {
			return sm, fmt.Errorf("safe_regex.%w", err)
		}
		sm.kind, sm.re = strRegex, re
		// Envoy ignores ignore_case for regular expressions; so do we.
		sm.ignoreCase = false
	case *matcherv3.StringMatcher_Custom:
		c, err := strlua.CompileCustom(p.Custom)
		if err != nil {
			return sm, fmt.Errorf("custom.%w", err)
		}
		// The extension sees the string as it is, as in Envoy.
		sm.kind, sm.custom, sm.ignoreCase = strCustom, c, false
	default:
		return sm, errors.New("match_pattern: one of exact, prefix, suffix, contains, safe_regex or custom is required")
	}
	if sm.ignoreCase {
		sm.pattern = asciiLower(sm.pattern)
	}
	return sm, nil
}

// compileRegex compiles a RegexMatcher for a full match of the value, as
// RE2 full matching works in Envoy. Errors start with the field name.
func compileRegex(m *matcherv3.RegexMatcher) (*regexp.Regexp, error) {
	// The bare pattern is compiled first so that errors quote what the
	// user wrote, and so that a pattern only valid inside the anchoring
	// group (e.g. "a)(b") is refused.
	if _, err := regexp.Compile(m.GetRegex()); err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	re, err := regexp.Compile(`^(?:` + m.GetRegex() + `)$`)
	if err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	return re, nil
}

// match reports whether s matches.
func (m *stringMatcher) match(s string) bool {
	switch m.kind {
	case strExact:
		if m.ignoreCase {
			return len(s) == len(m.pattern) && asciiEqualFold(s, m.pattern)
		}
		return s == m.pattern
	case strPrefix:
		if m.ignoreCase {
			return len(s) >= len(m.pattern) && asciiEqualFold(s[:len(m.pattern)], m.pattern)
		}
		return strings.HasPrefix(s, m.pattern)
	case strSuffix:
		if m.ignoreCase {
			return len(s) >= len(m.pattern) && asciiEqualFold(s[len(s)-len(m.pattern):], m.pattern)
		}
		return strings.HasSuffix(s, m.pattern)
	case strContains:
		if m.ignoreCase {
			return asciiContainsFold(s, m.pattern)
		}
		return strings.Contains(s, m.pattern)
	case strRegex:
		return m.re.MatchString(s)
	case strCustom:
		return m.custom.Match(s)
	}
	return false
}

// asciiLower lower-cases ASCII letters only, as Envoy's case folding does.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// asciiEqualFold compares equal-length strings with ASCII case folding;
// lower is already lower case.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// asciiContainsFold reports whether s contains the lower-case needle,
// ignoring ASCII case.
func asciiContainsFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		if asciiEqualFold(s[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}

// StringMatch is a compiled StringMatcher for other packages: it matches
// exactly as route and header matchers do.
type StringMatch struct {
	m stringMatcher
}

// CompileStringMatch compiles a StringMatcher; errors name the field below
// it.
func CompileStringMatch(m *matcherv3.StringMatcher) (StringMatch, error) {
	sm, err := compileStringMatcher(m)
	return StringMatch{m: sm}, err
}

// Matches reports whether v matches. It allocates nothing.
func (s *StringMatch) Matches(v string) bool { return s.m.match(v) }

// StringMatcher is a compiled envoy.type.matcher.v3.StringMatcher that
// matches as Envoy's does, for the filters that take one (the CORS
// filter's allowed origins). The zero value matches only "".
type StringMatcher struct {
	m stringMatcher
}

// CompileStringMatcher compiles a StringMatcher; errors name the field
// below it ("safe_regex.regex: ...").
func CompileStringMatcher(m *matcherv3.StringMatcher) (StringMatcher, error) {
	sm, err := compileStringMatcher(m)
	return StringMatcher{m: sm}, err
}

// Match reports whether s matches.
func (m *StringMatcher) Match(s string) bool { return m.m.match(s) }

// RequiredPrefix is a prefix that every matching string has ("" when
// there is none to tell): an exact or a case-sensitive prefix pattern.
// Callers use it to rule out candidates cheaply.
func (m *StringMatcher) RequiredPrefix() string {
	if m.m.ignoreCase || (m.m.kind != strExact && m.m.kind != strPrefix) {
		return ""
	}
	return m.m.pattern
}
