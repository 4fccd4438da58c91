package stats

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/dlclark/regexp2"
)

// Filter decides whether a stat name is shown (/stats?filter=). Matching is
// partial (unanchored) unless the pattern anchors itself with ^ and $.
type Filter interface {
	Match(name []byte) bool
}

// ErrInvalidRegex is wrapped by NewRE2Filter's errors.
var ErrInvalidRegex = errors.New("invalid re2 regex")

// InvalidRE2Body is Envoy's exact 400 body for a bad RE2 filter (no
// newline), for the admin to send when ErrInvalidRegex is returned.
const InvalidRE2Body = "Invalid re2 regex"

// ecmaScriptMatchTimeout bounds one ECMAScript match: that engine
// backtracks, so a hostile pattern could otherwise hang a render.
const ecmaScriptMatchTimeout = 100 * time.Millisecond

// NewRE2Filter compiles an RE2 pattern (Go's regexp), the default engine.
func NewRE2Filter(pattern string) (Filter, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRegex, err)
	}
	return re2Filter{re}, nil
}

type re2Filter struct{ re *regexp.Regexp }

func (f re2Filter) Match(name []byte) bool { return f.re.Match(name) }

// NewECMAScriptFilter compiles an ECMAScript pattern (regexp2), the engine
// used when the runtime key
// proxy.reloadable_features.admin_stats_filter_use_re2 is false. A match
// that runs past a time limit counts as no match.
func NewECMAScriptFilter(pattern string) (Filter, error) {
	re, err := regexp2.Compile(pattern, regexp2.ECMAScript)
	if err != nil {
		return nil, fmt.Errorf("invalid regex: %w", err)
	}
	re.MatchTimeout = ecmaScriptMatchTimeout
	return ecmaFilter{re}, nil
}

type ecmaFilter struct{ re *regexp2.Regexp }

func (f ecmaFilter) Match(name []byte) bool {
	ok, err := f.re.MatchString(string(name))
	return err == nil && ok
}
