package stats

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync/atomic"
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

// ecmaScriptMaxTimeouts bounds the matches of one filter that may run
// into ecmaScriptMatchTimeout; after that many the filter matches nothing
// more. A per-match bound alone would let a pattern that backtracks on
// every name take a million times the timeout over a big store.
const ecmaScriptMaxTimeouts = 5

// A PrefixedFilter is a Filter that matches only names starting with a
// known literal: Visit skips every prefix node whose name cannot lead to
// it, so a filter such as ^cluster_manager\.active_clusters$ (a readiness
// poll) reads a few nodes of a store of a million stats, not all of them.
type PrefixedFilter interface {
	Filter
	// LiteralPrefix returns what every name the filter matches starts
	// with; "" when nothing is known.
	LiteralPrefix() string
}

// NewRE2Filter compiles an RE2 pattern (Go's regexp), the default engine.
func NewRE2Filter(pattern string) (Filter, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRegex, err)
	}
	return re2Filter{re, anchoredLiteral(pattern)}, nil
}

type re2Filter struct {
	re     *regexp.Regexp
	prefix string
}

func (f re2Filter) Match(name []byte) bool { return f.re.Match(name) }

// LiteralPrefix implements PrefixedFilter.
func (f re2Filter) LiteralPrefix() string { return f.prefix }

// anchoredLiteral returns the literal a pattern that anchors itself at
// the start of the text (^, \A) matches first, case-sensitively: every
// name it matches starts with it. "" for any other pattern (unanchored,
// an alternation at the top, case folding).
func anchoredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return ""
	}
	lit := re.Sub[1]
	if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
		return ""
	}
	return string(lit.Rune)
}

// NewECMAScriptFilter compiles an ECMAScript pattern (regexp2), the engine
// used when the runtime key
// proxy.reloadable_features.admin_stats_filter_use_re2 is false. A match
// that runs past 100 ms counts as no match, and after five such matches
// the filter matches nothing more, so that a pattern that backtracks
// exponentially costs a render about a second at most.
func NewECMAScriptFilter(pattern string) (Filter, error) {
	f, err := newECMAScriptFilter(pattern, ecmaScriptMatchTimeout, ecmaScriptMaxTimeouts)
	if err != nil {
		return nil, err // not a nil *ecmaFilter in a non-nil Filter
	}
	return f, nil
}

func newECMAScriptFilter(pattern string, timeout time.Duration, maxTimeouts int32) (*ecmaFilter, error) {
	re, err := regexp2.Compile(pattern, regexp2.ECMAScript)
	if err != nil {
		return nil, fmt.Errorf("invalid regex: %w", err)
	}
	re.MatchTimeout = timeout
	return &ecmaFilter{re: re, maxTimeouts: maxTimeouts}, nil
}

// ecmaFilter is safe for concurrent use: the count of timed-out matches
// is atomic.
type ecmaFilter struct {
	re          *regexp2.Regexp
	maxTimeouts int32
	timeouts    atomic.Int32
}

func (f *ecmaFilter) Match(name []byte) bool {
	if f.timeouts.Load() >= f.maxTimeouts {
		return false
	}
	ok, err := f.re.MatchString(string(name))
	if err != nil {
		// The only error regexp2 returns from a match is its timeout.
		f.timeouts.Add(1)
		return false
	}
	return ok
}
