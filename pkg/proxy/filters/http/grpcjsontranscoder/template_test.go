package grpcjsontranscoder

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTemplateRefusesBadTemplates(t *testing.T) {
	for _, s := range []string{
		"v1/shelves",        // no leading slash
		"/v1/**/books",      // ** not last
		"/v1/{shelf",        // unclosed variable
		"/v1//books",        // empty segment
		"/v1/{}",            // variable without a field path
		"/v1/{a.9b}",        // bad identifier
		"/v1/{a}/{a}",       // bound twice
		"/v1/{a={b}}",       // nested variable
		"/v1/books:",        // empty verb
		"/v1/sh*lves",       // wildcard inside a literal
		"/v1/{name=**}/end", // ** inside a variable, not last
	} {
		if _, err := parseTemplate(s); err == nil {
			t.Errorf("parseTemplate(%q) accepted", s)
		}
	}
}

// newMatcher registers templates for the methods given as "GET /path".
func newMatcher(t *testing.T, spec unescapeSpec, rules ...string) *matcher {
	t.Helper()
	m := &matcher{verbs: map[string]bool{}, spec: spec, ignored: map[string]bool{}}
	for _, r := range rules {
		verb, path, _ := strings.Cut(r, " ")
		tmpl, err := parseTemplate(path)
		if err != nil {
			t.Fatalf("parseTemplate(%q): %v", path, err)
		}
		if tmpl.verb != "" {
			m.verbs[tmpl.verb] = true
		}
		m.add(&rule{httpMethod: verb, tmpl: tmpl, body: r})
	}
	return m
}

// bindingMap renders bindings as "field.path" -> values.
func bindingMap(bs []binding) map[string][]string {
	out := map[string][]string{}
	for _, b := range bs {
		k := strings.Join(b.fieldPath, ".")
		out[k] = append(out[k], b.value)
	}
	return out
}

func TestMatcherLookup(t *testing.T) {
	m := newMatcher(t, exceptReserved,
		"GET /v1/shelves/{shelf}",
		"GET /v1/shelves/special",
		"GET /v1/{name=shelves/*/books/*}",
		"POST /v1/shelves/{shelf}/books",
		"GET /files/{path=**}",
		"POST /v1/things/{id}:cancel",
		"* /any/{x}",
		"GET /",
	)
	cases := []struct {
		method, path string
		rule         string // the matched rule, "" for none
		bindings     map[string][]string
	}{
		{"GET", "/v1/shelves/7", "GET /v1/shelves/{shelf}", map[string][]string{"shelf": {"7"}}},
		{"GET", "/v1/shelves/7/", "GET /v1/shelves/{shelf}", map[string][]string{"shelf": {"7"}}},
		{"GET", "/v1/shelves/special", "GET /v1/shelves/special", map[string][]string{}},
		{"POST", "/v1/shelves/7", "", nil},
		{"GET", "/v1/shelves/1/books/2", "GET /v1/{name=shelves/*/books/*}", map[string][]string{"name": {"shelves/1/books/2"}}},
		{"POST", "/v1/shelves/x/books?book.title=A+B&book.tags=a&book.tags=b", "POST /v1/shelves/{shelf}/books",
			map[string][]string{"shelf": {"x"}, "book.title": {"A+B"}, "book.tags": {"a", "b"}}},
		{"GET", "/files/a/b%2Fc/d%20e", "GET /files/{path=**}", map[string][]string{"path": {"a/b%2Fc/d e"}}},
		{"GET", "/files", "GET /files/{path=**}", map[string][]string{"path": {""}}},
		{"GET", "/v1/shelves/a%2Fb%20c", "GET /v1/shelves/{shelf}", map[string][]string{"shelf": {"a/b c"}}},
		{"POST", "/v1/things/9:cancel", "POST /v1/things/{id}:cancel", map[string][]string{"id": {"9"}}},
		{"POST", "/v1/things/9:other", "", nil},
		{"DELETE", "/any/1", "* /any/{x}", map[string][]string{"x": {"1"}}},
		{"GET", "/", "GET /", map[string][]string{}},
		{"GET", "/v1/unknown", "", nil},
		{"GET", "/v1/shelves/7?novalue&=x&q=%41", "GET /v1/shelves/{shelf}", map[string][]string{"shelf": {"7"}, "q": {"A"}}},
	}
	for _, c := range cases {
		r, bs := m.lookup(c.method, c.path)
		got := ""
		if r != nil {
			got = r.body
		}
		if got != c.rule {
			t.Errorf("%s %s matched %q, want %q", c.method, c.path, got, c.rule)
			continue
		}
		if r != nil && !reflect.DeepEqual(bindingMap(bs), c.bindings) {
			t.Errorf("%s %s bound %v, want %v", c.method, c.path, bindingMap(bs), c.bindings)
		}
	}
}

func TestMatcherVerbsAndOptions(t *testing.T) {
	m := newMatcher(t, exceptReserved, "GET /v1/{name}", "GET /v1/{name}:watch")
	if r, bs := m.lookup("GET", "/v1/a:watch"); r == nil || r.body != "GET /v1/{name}:watch" || bs[0].value != "a" {
		t.Fatalf("registered verb: %v %v", r, bs)
	}
	// An unregistered verb is part of the segment...
	if r, bs := m.lookup("GET", "/v1/a:list"); r == nil || r.body != "GET /v1/{name}" || bs[0].value != "a:list" {
		t.Fatalf("unregistered verb: %v %v", r, bs)
	}
	// ...unless match_unregistered_custom_verb is set.
	m.unregisteredVerb = true
	if r, _ := m.lookup("GET", "/v1/a:list"); r != nil {
		t.Fatalf("match_unregistered_custom_verb matched %q", r.body)
	}

	m = newMatcher(t, exceptReserved, "GET /q")
	m.plus = true
	m.ignored["api_key"] = true
	_, bs := m.lookup("GET", "/q?s=a+b%2B&api_key=secret")
	if got := bindingMap(bs); !reflect.DeepEqual(got, map[string][]string{"s": {"a b+"}}) {
		t.Fatalf("query_param_unescape_plus and ignored parameters: %v", got)
	}
}

func TestUnescapeSpecs(t *testing.T) {
	// The example of url_unescape_spec's documentation.
	const in = "%2f%23/%20%2523"
	for spec, want := range map[unescapeSpec]string{
		exceptReserved: "%2f%23/ %23",
		exceptSlash:    "%2f#/ %23",
		allCharacters:  "/#/ %23",
	} {
		if got := spec.unescape(in); got != want {
			t.Errorf("spec %d: %q, want %q", spec, got, want)
		}
	}
	if got := unescapeAll("100%"); got != "100%" {
		t.Errorf("a bad escape changed: %q", got)
	}
	// Through a multi-segment variable, per spec.
	m := newMatcher(t, allCharacters, "GET /f/{p=**}")
	if _, bs := m.lookup("GET", "/f/a%2Fb/c"); bs[0].value != "a/b/c" {
		t.Errorf("ALL_CHARACTERS: %q", bs[0].value)
	}
	m = newMatcher(t, exceptSlash, "GET /f/{p=**}")
	if _, bs := m.lookup("GET", "/f/a%2Fb%23/c"); bs[0].value != "a%2Fb#/c" {
		t.Errorf("ALL_CHARACTERS_EXCEPT_SLASH: %q", bs[0].value)
	}
}

func TestMatcherAmbiguousRules(t *testing.T) {
	m := newMatcher(t, exceptReserved, "GET /v1/{a}", "GET /v1/{b}", "POST /v1/{a}")
	if r, _ := m.lookup("GET", "/v1/x"); r != nil {
		t.Errorf("two rules of one shape: %q matched", r.body)
	}
	if r, _ := m.lookup("POST", "/v1/x"); r == nil {
		t.Error("another method's rule of that shape did not match")
	}
}
