package httpconn

import "testing"

func TestCanonicalPath(t *testing.T) {
	tests := map[string]string{
		"/":                "/",
		"/a/b":             "/a/b",
		"/a/./b":           "/a/b",
		"/a/b/../c":        "/a/c",
		"/../../a":         "/a",
		"/a/..":            "/",
		"/a/.":             "/a/",
		"/a/b/..":          "/a/",
		"/a//../b":         "/a/b",
		"/%2e%2E/a":        "/a",
		"/a/%2e/b":         "/a/b",
		"/%41%7a%2d":       "/Az-",
		"/%2f%3a":          "/%2F%3A",
		"/a b":             "/a%20b",
		"/\\a\\..\\b":      "//b", // empty segments stay (RFC 3986)
		"/x?y=/../z":       "/x?y=/../z",
		"/%zz":             "/%zz",
		"/caf\xc3\xa9":     "/caf%C3%A9",
		"/a.b/c..d/...":    "/a.b/c..d/...",
		"/trailing/./?q=1": "/trailing/?q=1",
		"/dots/../?q=./..": "/?q=./..",
	}
	for in, want := range tests {
		got, ok := canonicalPath(in)
		if !ok || got != want {
			t.Errorf("canonicalPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := canonicalPath("a/b"); ok {
		t.Error("a relative path was accepted")
	}
}

func TestMergeSlashes(t *testing.T) {
	tests := map[string]string{
		"/a/b":        "/a/b",
		"//a//b//":    "/a/b/",
		"/a///b?c//d": "/a/b?c//d",
		"//":          "//", // as Envoy writes it
	}
	for in, want := range tests {
		if got := mergeSlashes(in); got != want {
			t.Errorf("mergeSlashes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnescapeSlashes(t *testing.T) {
	tests := map[string]struct {
		want  string
		found bool
	}{
		"/a/b":         {"/a/b", false},
		"/a%2Fb%2fc":   {"/a/b/c", true},
		"/a%5cb%5C":    {"/a\\b\\", true},
		"/a%20b":       {"/a%20b", false},
		"/a?x=%2F":     {"/a?x=%2F", false},
		"/a%2Fb?x=%2F": {"/a/b?x=%2F", true},
		"/trailing%2":  {"/trailing%2", false},
		"/trailing%2F": {"/trailing/", true},
	}
	for in, tc := range tests {
		got, found := unescapeSlashes(in)
		if got != tc.want || found != tc.found {
			t.Errorf("unescapeSlashes(%q) = %q, %v; want %q, %v", in, got, found, tc.want, tc.found)
		}
	}
}
