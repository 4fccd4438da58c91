package admin

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParseQuery(t *testing.T) {
	tests := map[string]struct {
		raw   string
		names []string
		want  map[string]string
	}{
		"empty":                    {raw: "", names: nil, want: map[string]string{}},
		"one pair":                 {raw: "format=json", names: []string{"format"}, want: map[string]string{"format": "json"}},
		"presence flag":            {raw: "usedonly", names: []string{"usedonly"}, want: map[string]string{"usedonly": ""}},
		"empty value":              {raw: "filter=", names: []string{"filter"}, want: map[string]string{"filter": ""}},
		"first value wins":         {raw: "a=1&b=2&a=3", names: []string{"a", "b"}, want: map[string]string{"a": "1", "b": "2"}},
		"percent decoding":         {raw: "filter=%5Ecluster%5C.%2A&k%3Dy=v%26w", names: []string{"filter", "k=y"}, want: map[string]string{"filter": `^cluster\.*`, "k=y": "v&w"}},
		"plus is a space":          {raw: "msg=hello+world", names: []string{"msg"}, want: map[string]string{"msg": "hello world"}},
		"value keeps later equals": {raw: "paths=a=b,c=d", names: []string{"paths"}, want: map[string]string{"paths": "a=b,c=d"}},
		"invalid escapes kept":     {raw: "a=%zz&b=%4&c=100%", names: []string{"a", "b", "c"}, want: map[string]string{"a": "%zz", "b": "%4", "c": "100%"}},
		"empty pieces skipped":     {raw: "&&a=1&&", names: []string{"a"}, want: map[string]string{"a": "1"}},
		"empty name dropped":       {raw: "=v&%20=w", names: []string{" "}, want: map[string]string{" ": "w"}},
		"semicolon is literal":     {raw: "a=1;b=2", names: []string{"a"}, want: map[string]string{"a": "1;b=2"}},
		"utf-8 escapes":            {raw: "k=%C3%A9t%C3%A9", names: []string{"k"}, want: map[string]string{"k": "été"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := ParseQuery(tc.raw)
			if got := p.Names(); !slices.Equal(got, tc.names) {
				t.Errorf("Names() = %q, want %q", got, tc.names)
			}
			if p.Len() != len(tc.names) {
				t.Errorf("Len() = %d, want %d", p.Len(), len(tc.names))
			}
			for k, v := range tc.want {
				got, ok := p.Lookup(k)
				if !ok || got != v {
					t.Errorf("Lookup(%q) = %q, %v; want %q, true", k, got, ok, v)
				}
				if !p.Has(k) || p.Get(k) != v {
					t.Errorf("Has/Get(%q) disagree with Lookup", k)
				}
			}
			if p.Has("absent") || p.Get("absent") != "" {
				t.Errorf("an absent name is reported present")
			}
		})
	}
}

func TestParamsWithout(t *testing.T) {
	p := ParseQuery("a=1&b=2&c=3")
	q := p.without("b")
	if got := q.Names(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("without(b).Names() = %q", got)
	}
	if q.Has("b") || q.Get("c") != "3" {
		t.Errorf("without(b) = %v", q)
	}
	if !p.Has("b") {
		t.Errorf("without changed its receiver")
	}
}

// FuzzParseQuery checks that any input parses without panicking into a
// consistent Params, and that it agrees with net/url on the inputs both
// accept (net/url refuses ';' and bad escapes, which Envoy keeps).
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "a=1&b=2", "usedonly", "a=%zz", "x=%41%42+c&x=2", "=v", "paths=a:b,c=d", "%", "a&&b=", "k=%C3%A9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p := ParseQuery(raw)
		names := p.Names()
		if len(names) != p.Len() {
			t.Fatalf("Len() = %d, Names() has %d", p.Len(), len(names))
		}
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || seen[n] || !p.Has(n) {
				t.Fatalf("bad name %q in %q", n, names)
			}
			seen[n] = true
		}
		if strings.Contains(raw, ";") {
			return
		}
		std, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for k, vs := range std {
			if k == "" {
				continue
			}
			if got, ok := p.Lookup(k); !ok || got != vs[0] {
				t.Fatalf("Lookup(%q) = %q, %v; net/url says %q", k, got, ok, vs[0])
			}
		}
		for _, n := range names {
			if _, ok := std[n]; !ok {
				t.Fatalf("name %q unknown to net/url", n)
			}
		}
	})
}
