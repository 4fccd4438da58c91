//lint:file-ignore SA1019 Envoy still accepts these deprecated fields and configurations use them; this file translates them.

package router

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// legacyHeaderMatch translates the deprecated HeaderMatcher forms
// (exact_match, prefix_match, suffix_match, contains_match,
// safe_regex_match) into a string matcher; ok is false for other forms.
func legacyHeaderMatch(h *routev3.HeaderMatcher) (sm stringMatcher, ok bool, err error) {
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch:
		return stringMatcher{kind: strExact, pattern: s.ExactMatch}, true, nil
	case *routev3.HeaderMatcher_PrefixMatch:
		return stringMatcher{kind: strPrefix, pattern: s.PrefixMatch}, true, nil
	case *routev3.HeaderMatcher_SuffixMatch:
		return stringMatcher{kind: strSuffix, pattern: s.SuffixMatch}, true, nil
	case *routev3.HeaderMatcher_ContainsMatch:
		return stringMatcher{kind: strContains, pattern: s.ContainsMatch}, true, nil
	case *routev3.HeaderMatcher_SafeRegexMatch:
		re, err := compileRegex(s.SafeRegexMatch)
		if err != nil {
			return sm, true, fmt.Errorf("safe_regex_match.%w", err)
		}
		return stringMatcher{kind: strRegex, re: re}, true, nil
	}
	return sm, false, nil
}

// legacyAppend is HeaderValueOption.append, the boolean append_action
// replaced; nil when unset.
func legacyAppend(o *corev3.HeaderValueOption) *wrapperspb.BoolValue { return o.GetAppend() }

// legacyTotalWeight is WeightedCluster.total_weight; nil when unset.
func legacyTotalWeight(w *routev3.WeightedCluster) *wrapperspb.UInt32Value { return w.GetTotalWeight() }
