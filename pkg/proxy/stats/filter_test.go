package stats

import (
	"errors"
	"testing"
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

// FuzzFilters compiles any pattern with both engines and matches it: a bad
// pattern must be an error, never a panic or a hang.
func FuzzFilters(f *testing.F) {
	for _, s := range []string{"upstream", "^a.*b$", "(", "(a+)+$", "[", "\\", "(?=x)", "a{2,}"} {
		f.Add(s, "cluster.c.upstream_rq_200")
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		for _, newFilter := range []func(string) (Filter, error){NewRE2Filter, NewECMAScriptFilter} {
			fl, err := newFilter(pattern)
			if err != nil {
				continue
			}
			fl.Match([]byte(name))
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
