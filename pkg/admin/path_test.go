package admin

import (
	"strings"
	"testing"
)

func TestNormalizePath(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"root":                    {"/", "/"},
		"empty":                   {"", "/"},
		"plain":                   {"/stats", "/stats"},
		"nested":                  {"/stats/prometheus", "/stats/prometheus"},
		"merged leading slashes":  {"//stats", "/stats"},
		"merged inner slashes":    {"/stats//prometheus", "/stats/prometheus"},
		"trailing slash kept":     {"/stats/", "/stats/"},
		"dot segment":             {"/./help", "/help"},
		"dot-dot segment":         {"/a/../help", "/help"},
		"dot-dot above root":      {"/../../help", "/help"},
		"final dot":               {"/help/.", "/help/"},
		"final dot-dot":           {"/a/b/..", "/a/"},
		"only dot-dots":           {"/..", "/"},
		"relative":                {"help", "/help"},
		"asterisk":                {"*", "/*"},
		"dots in names untouched": {"/a.b/..c/...", "/a.b/..c/..."},
		"case kept":               {"/Stats", "/Stats"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := normalizePath(tc.in); got != tc.want {
				t.Errorf("normalizePath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzNormalizePath checks the invariants of a normalized path: it is
// absolute, has no empty, "." or ".." segment, and normalizing is idempotent.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/", "//stats", "/a/../b", "/./.", "a/b/", "/..//../x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := normalizePath(in)
		if !strings.HasPrefix(got, "/") {
			t.Fatalf("normalizePath(%q) = %q is not absolute", in, got)
		}
		inner := strings.TrimSuffix(got[1:], "/")
		if inner != "" {
			for _, seg := range strings.Split(inner, "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Fatalf("normalizePath(%q) = %q keeps segment %q", in, got, seg)
				}
			}
		}
		if again := normalizePath(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, got, again)
		}
	})
}
