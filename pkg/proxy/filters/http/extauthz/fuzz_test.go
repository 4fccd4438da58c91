package extauthz

import (
	"strings"
	"testing"
)

// FuzzEditQuery feeds editQuery paths from clients and parameters from a
// service: it never panics, keeps the path before the query, sets what it
// is told to set and leaves out what it is told to remove.
func FuzzEditQuery(f *testing.F) {
	f.Add("/p?a=1&b=2", "c", "3", "a")
	f.Add("/p", "", "", "")
	f.Add("/p?&&=&a", "a", "", "=")
	f.Add("?x", "x", "y=z", "")
	f.Fuzz(func(t *testing.T, path, setKey, setValue, remove string) {
		if strings.ContainsAny(setKey+remove, "&=") || strings.Contains(setValue, "&") || setKey == remove {
			// Keys and values the query syntax cannot carry (written
			// as they come, as Envoy writes them), or one key set and
			// removed at once.
			t.Skip()
		}
		got, changed := editQuery(path, [][2]string{{setKey, setValue}}, []string{remove})
		if !changed {
			t.Fatal("an edit reported no change")
		}
		base, _, _ := strings.Cut(path, "?")
		if !strings.HasPrefix(got, base) {
			t.Fatalf("editQuery(%q) = %q lost the path", path, got)
		}
		_, query, _ := strings.Cut(got[len(base):], "?")
		found := false
		for part := range strings.SplitSeq(query, "&") {
			k, v, _ := strings.Cut(part, "=")
			if k == remove && part != "" {
				t.Fatalf("editQuery(%q) = %q kept %q", path, got, remove)
			}
			if k == setKey && v == setValue {
				found = true
			}
		}
		if !found {
			t.Fatalf("editQuery(%q) = %q did not set %q=%q", path, got, setKey, setValue)
		}
	})
}
