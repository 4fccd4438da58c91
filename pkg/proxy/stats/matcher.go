package stats

import (
	"fmt"
	"regexp"
	"strings"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	strlua "github.com/outrigger-dev/outrigger/pkg/proxy/stringmatcher/lua"
)

// stringMatcher is a compiled envoy.type.matcher.v3.StringMatcher.
type stringMatcher struct {
	exact, prefix, suffix, contains *string
	re                              *regexp.Regexp
	ignoreCase                      bool
	// custom is a custom pattern's extension (the Lua matcher).
	custom *strlua.Matcher
}

func newStringMatcher(m *matcherv3.StringMatcher) (stringMatcher, error) {
	sm := stringMatcher{ignoreCase: m.GetIgnoreCase()}
	fold := func(s string) *string {
		if sm.ignoreCase {
			s = strings.ToLower(s)
		}
		return &s
	}
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		sm.exact = fold(p.Exact)
	case *matcherv3.StringMatcher_Prefix:
		sm.prefix = fold(p.Prefix)
	case *matcherv3.StringMatcher_Suffix:
		sm.suffix = fold(p.Suffix)
	case *matcherv3.StringMatcher_Contains:
		sm.contains = fold(p.Contains)
	case *matcherv3.StringMatcher_SafeRegex:
		re, err := regexp.Compile(p.SafeRegex.GetRegex())
		if err != nil {
			return sm, fmt.Errorf("invalid safe_regex: %w", err)
		}
		sm.re = re
	case *matcherv3.StringMatcher_Custom:
		c, err := strlua.CompileCustom(p.Custom)
		if err != nil {
			return sm, fmt.Errorf("custom.%w", err)
		}
		sm.custom = c
	default:
		return sm, fmt.Errorf("string matcher: match pattern %T is not supported by Outrigger", p)
	}
	return sm, nil
}

func (m stringMatcher) match(s string) bool {
	if m.custom != nil {
		// The extension sees the name as it is, as in Envoy.
		return m.custom.Match(s)
	}
	if m.re != nil {
		return m.re.MatchString(s)
	}
	if m.ignoreCase {
		s = strings.ToLower(s)
	}
	switch {
	case m.exact != nil:
		return s == *m.exact
	case m.prefix != nil:
		return strings.HasPrefix(s, *m.prefix)
	case m.suffix != nil:
		return strings.HasSuffix(s, *m.suffix)
	case m.contains != nil:
		return strings.Contains(s, *m.contains)
	}
	return false
}

// statsMatcher is the compiled stats_config.stats_matcher: which names get
// a listed stat.
type statsMatcher struct {
	rejectAll bool
	inclusion bool // patterns list the accepted names, else the rejected
	patterns  []stringMatcher
}

func newStatsMatcher(cfg *metricsv3.StatsMatcher) (statsMatcher, error) {
	var m statsMatcher
	var list *matcherv3.ListStringMatcher
	switch v := cfg.GetStatsMatcher().(type) {
	case nil:
		return m, nil
	case *metricsv3.StatsMatcher_RejectAll:
		m.rejectAll = v.RejectAll
		return m, nil
	case *metricsv3.StatsMatcher_InclusionList:
		m.inclusion, list = true, v.InclusionList
	case *metricsv3.StatsMatcher_ExclusionList:
		list = v.ExclusionList
	}
	for i, p := range list.GetPatterns() {
		sm, err := newStringMatcher(p)
		if err != nil {
			return m, fmt.Errorf("stats_config.stats_matcher.patterns[%d]: %w", i, err)
		}
		m.patterns = append(m.patterns, sm)
	}
	return m, nil
}

// acceptsAll reports whether every name is accepted, so that the caller
// need not build a name to ask.
func (m statsMatcher) acceptsAll() bool {
	return !m.rejectAll && !m.inclusion && len(m.patterns) == 0
}

func (m statsMatcher) accepts(name string) bool {
	if m.rejectAll {
		return false
	}
	if !m.inclusion && len(m.patterns) == 0 {
		return true
	}
	for _, p := range m.patterns {
		if p.match(name) {
			return m.inclusion
		}
	}
	return !m.inclusion
}
