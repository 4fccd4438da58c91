package router

import (
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// RegexRewrite is a compiled RegexMatchAndSubstitute, for the filters
// that rewrite values with one (header_to_metadata's
// regex_value_rewrite): every match of the pattern is replaced, as
// Envoy's replaceAll does.
type RegexRewrite struct {
	rw rewrite
}

// CompileRegexRewrite compiles rr; errors start with "regex_rewrite." and
// the field below it, which callers rename to their own field.
func CompileRegexRewrite(rr *matcherv3.RegexMatchAndSubstitute) (*RegexRewrite, error) {
	rw, err := compileRewrite("", rr)
	if err != nil {
		return nil, err
	}
	return &RegexRewrite{rw: rw}, nil
}

// Apply returns v with every match of the pattern substituted.
func (r *RegexRewrite) Apply(v string) string {
	return r.rw.re.ReplaceAllString(v, r.rw.substitution)
}
