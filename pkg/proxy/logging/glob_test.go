package logging

import (
	"path"
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	cases := map[string]struct {
		pattern, name string
		want          bool
	}{
		"exact":                 {"server", "server", true},
		"exact mismatch":        {"server", "servers", false},
		"empty both":            {"", "", true},
		"empty pattern":         {"", "x", false},
		"star matches empty":    {"*", "", true},
		"star matches all":      {"*", "pkg/a/b.go", true},
		"star crosses slashes":  {"pkg/*.go", "pkg/a/b.go", true},
		"prefix star":           {"*.go", "main.go", true},
		"suffix star":           {"serv*", "server", true},
		"middle star":           {"s*r", "server", true},
		"middle star mismatch":  {"s*x", "server", false},
		"question mark":         {"s?rver", "server", true},
		"question needs a byte": {"server?", "server", false},
		"several stars":         {"*a*b*c*", "xxaxxbxxcxx", true},
		"backtracking":          {"*ab", "aab", true},
		"backtracking mismatch": {"*aab", "ab", false},
		"trailing stars":        {"a**", "a", true},
		"star then question":    {"*?", "", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := matchGlob(tc.pattern, tc.name); got != tc.want {
				t.Errorf("matchGlob(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}

func TestGlobRuleMatches(t *testing.T) {
	const file = "pkg/proxy/server/server_run.go"
	cases := map[string]struct {
		pattern string
		want    bool
	}{
		"stem":             {"server_run", true},
		"base name":        {"server_run.go", true},
		"stem glob":        {"server_*", true},
		"directory name":   {"server", false},
		"whole path":       {file, true},
		"path glob":        {"pkg/proxy/*/server_run.go", true},
		"path must anchor": {"proxy/server/server_run.go", false},
		"path star prefix": {"*/server_run.go", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rule := globRule{pattern: tc.pattern, isPath: strings.Contains(tc.pattern, "/")}
			if got := rule.matches(file); got != tc.want {
				t.Errorf("rule %q matches %s = %v, want %v", tc.pattern, file, got, tc.want)
			}
		})
	}
}

// FuzzMatchGlob compares the matcher with path.Match on patterns both
// understand (no slashes, no brackets or escapes, where '*' means the same).
func FuzzMatchGlob(f *testing.F) {
	f.Add("s*r?er", "server")
	f.Add("*a*b*c*d*e*f*", strings.Repeat("a", 64))
	f.Add("", "")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := matchGlob(pattern, name)
		if strings.ContainsAny(pattern+name, `/[]\`) {
			return
		}
		want, err := path.Match(pattern, name)
		if err != nil || !validASCII(pattern+name) {
			return // path.Match's '?' is a rune, ours a byte
		}
		if got != want {
			t.Fatalf("matchGlob(%q, %q) = %v, path.Match says %v", pattern, name, got, want)
		}
	})
}

func validASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
