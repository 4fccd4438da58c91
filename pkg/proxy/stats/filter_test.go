package stats

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

func TestFilters(t *testing.T) {
	type ctor func(string) (Filter, error)
	engines := map[string]ctor{"re2": NewRE2Filter, "ecmascript": NewECMAScriptFilter}
	cases := map[string]struct {
		pattern string
		name    string
		want    bool
	}{
		"partial match":        {"upstream", "cluster.c.upstream_rq", true},
		"anchored":             {"^cluster\\.c\\.", "cluster.c.x", true},
		"anchored no match":    {"^c\\.", "cluster.c.x", false},
		"end anchor":           {"_rq$", "cluster.c.upstream_rq", true},
		"empty matches all":    {"", "anything", true},
		"alternation":          {"^(server|http)\\.", "http.admin.x", true},
		"no match":             {"nothing", "cluster.c.x", false},
		"case sensitive":       {"Cluster", "cluster", false},
		"dot is any character": {"a.c", "abc", true},
	}
	for engine, newFilter := range engines {
		for name, tc := range cases {
			t.Run(engine+"/"+name, func(t *testing.T) {
				f, err := newFilter(tc.pattern)
				if err != nil {
					t.Fatal(err)
				}
				if got := f.Match([]byte(tc.name)); got != tc.want {
					t.Errorf("Match(%q) with %q = %v, want %v", tc.name, tc.pattern, got, tc.want)
				}
			})
		}
	}
}

func TestFilterErrors(t *testing.T) {
	cases := map[string]struct {
		newFilter func(string) (Filter, error)
		pattern   string
		wantRE2   bool
	}{
		"re2 unbalanced":        {NewRE2Filter, "(", true},
		"re2 lookahead":         {NewRE2Filter, "(?=x)", true},
		"ecmascript unbalanced": {NewECMAScriptFilter, "(", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.newFilter(tc.pattern)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrInvalidRegex) != tc.wantRE2 {
				t.Errorf("errors.Is(%v, ErrInvalidRegex) = %v", err, !tc.wantRE2)
			}
		})
	}
	if _, err := NewECMAScriptFilter("(?=x)x"); err != nil {
		t.Errorf("ECMAScript lookahead must compile: %v", err)
	}
}

// pathological backtracks exponentially in a backtracking engine on
// pathologicalName before its second alternative matches, so only a
// match that gave up reports false.
const (
	pathological     = `^(a+)+$|a`
	pathologicalName = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
)

// TestECMAScriptFilterGivesUp checks both bounds of the ECMAScript engine:
// a match past the timeout counts as no match, and after the allowed
// number of timed-out matches the filter stops matching at all, so a
// render over many names ends.
func TestECMAScriptFilterGivesUp(t *testing.T) {
	f, err := newECMAScriptFilter(pathological, 5*time.Millisecond, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match([]byte("a")) {
		t.Fatal(`the pattern does not match "a"`)
	}
	for i := range 20 {
		if f.Match([]byte(pathologicalName)) {
			t.Fatalf("match %d of a name that backtracks reported a match: the timeout did not stop it", i)
		}
	}
	if got := f.timeouts.Load(); got != 3 {
		t.Errorf("%d timed-out matches, want 3 (then none run)", got)
	}
	if f.Match([]byte("a")) {
		t.Error("the filter still matches after giving up")
	}
	if f, err := NewECMAScriptFilter("("); f != nil || err == nil {
		t.Errorf(`NewECMAScriptFilter("(") = %v, %v; want nil Filter and an error`, f, err)
	}
}

// FuzzRE2Filter compiles any pattern: a bad one (including one that is
// not UTF-8) must be an error wrapping ErrInvalidRegex, never a panic. A
// quoted literal must match exactly the names containing it (partial,
// unanchored matching).
func FuzzRE2Filter(f *testing.F) {
	for _, s := range []string{"upstream", "^a.*b$", "(", "(a+)+$", "[", "\\", "(?=x)", "a{2,}", "a{1001}"} {
		f.Add(s, "cluster.c.upstream_rq_200")
	}
	f.Add("\uFFFD", "\x9f")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		fl, err := NewRE2Filter(pattern)
		if err != nil {
			if !errors.Is(err, ErrInvalidRegex) {
				t.Fatalf("error %v does not wrap ErrInvalidRegex", err)
			}
		} else {
			fl.Match([]byte(name))
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			// RE2 refuses patterns that are not UTF-8, quoted or not, and
			// reads an invalid byte of a name as U+FFFD.
			return
		}
		lit, err := NewRE2Filter(regexp.QuoteMeta(pattern))
		if err != nil {
			t.Fatalf("quoted literal %q: %v", pattern, err)
		}
		if got, want := lit.Match([]byte(name)), strings.Contains(name, pattern); got != want {
			t.Fatalf("literal %q on %q: match %v, want %v", pattern, name, got, want)
		}
	})
}

// FuzzECMAScriptFilter compiles any pattern with the backtracking engine:
// a bad one must be an error, never a panic, and a match must end (its
// timeout bounds it). A quoted literal must match exactly the names
// containing it.
func FuzzECMAScriptFilter(f *testing.F) {
	for _, s := range []string{"upstream", "^a.*b$", "(", pathological, "[", "\\", "(?=x)x", "a{2,}", "(?<n>a)\\k<n>"} {
		f.Add(s, "cluster.c.upstream_rq_200")
	}
	f.Add(pathological, pathologicalName)
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if fl, err := newECMAScriptFilter(pattern, 10*time.Millisecond, 1); err == nil {
			fl.Match([]byte(name))
		}
		if !utf8.ValidString(name) || !utf8.ValidString(pattern) {
			return // the engine matches runes: invalid bytes become U+FFFD
		}
		lit, err := NewECMAScriptFilter(regexp2.Escape(pattern))
		if err != nil {
			t.Fatalf("escaped literal %q: %v", pattern, err)
		}
		if got, want := lit.Match([]byte(name)), strings.Contains(name, pattern); got != want {
			t.Fatalf("literal %q on %q: match %v, want %v", pattern, name, got, want)
		}
	})
}

func TestParseStatType(t *testing.T) {
	cases := map[string]struct {
		want    StatType
		wantErr bool
	}{
		"":             {TypeAll, false},
		"All":          {TypeAll, false},
		"Counters":     {TypeCounters, false},
		"Gauges":       {TypeGauges, false},
		"TextReadouts": {TypeTextReadouts, false},
		"Histograms":   {TypeHistograms, false},
		"counters":     {TypeAll, true},
	}
	for in, tc := range cases {
		t.Run(in, func(t *testing.T) {
			got, err := ParseStatType(in)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("ParseStatType(%q) = %v, %v", in, got, err)
			}
			if err != nil && !errors.Is(err, ErrInvalidType) {
				t.Errorf("error %v does not wrap ErrInvalidType", err)
			}
		})
	}
}
