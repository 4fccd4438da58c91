package router

import (
	"math/bits"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/google/go-cmp/cmp"
)

// Field makes the test header map a HeaderFields.
func (h *headers) Field(name string, i int) (string, bool) {
	for _, p := range h.kv {
		if p[0] == name {
			if i == 0 {
				return p[1], true
			}
			i--
		}
	}
	return "", false
}

// hashPolicyOf compiles the hash_policy of a route action written in YAML.
func hashPolicyOf(t *testing.T, policies string) *HashPolicy {
	t.Helper()
	table := mustCompile(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, hash_policy: `+policies+`}`)
	return table.Match("x", "/").HashPolicy
}

func TestHashPolicy(t *testing.T) {
	xx := xxhash.Sum64String
	fold := func(a, b uint64) uint64 { return bits.RotateLeft64(a, 1) ^ b }
	tests := map[string]struct {
		policies   string
		headers    []string
		path       string
		sourceIP   string
		want       uint64
		noHash     bool
		setCookies []string
	}{
		"a header": {
			policies: `[{header: {header_name: X-User}}]`, headers: []string{"x-user", "alice"},
			want: xx("alice"),
		},
		"a header's fields, sorted": {
			// Envoy's xxHash64 of a span: each value seeded with the
			// hash of those before it.
			policies: `[{header: {header_name: x-user}}]`, headers: []string{"x-user", "foo", "x-user", "bar"},
			want: seeded("foo", seeded("bar", 0)),
		},
		"a header rewritten": {
			policies: `[{header: {header_name: ":path", regex_rewrite: {pattern: {regex: "^/(\\w+)/.*$"}, substitution: "\\1"}}}]`,
			path:     "/users/42?x=1",
			want:     xx("users"),
		},
		"the authority": {
			policies: `[{header: {header_name: ":authority"}}]`,
			want:     xx("example.com"),
		},
		"a missing header": {
			policies: `[{header: {header_name: x-user}}]`, noHash: true,
		},
		"a cookie": {
			policies: `[{cookie: {name: session}}]`,
			headers:  []string{"cookie", "a=1; session=\"abc\"", "cookie", "session=later"},
			want:     xx("abc"),
		},
		"a cookie in a later field": {
			policies: `[{cookie: {name: session}}]`,
			headers:  []string{"cookie", "a=1", "cookie", " session=zz"},
			want:     xx("zz"),
		},
		"a missing cookie without ttl": {
			policies: `[{cookie: {name: session}}]`, headers: []string{"cookie", "sessionx=1"},
			noHash: true,
		},
		"a missing cookie with ttl is generated": {
			policies:   `[{cookie: {name: session, ttl: 3600s, path: /app, attributes: [{name: SameSite, value: Strict}, {name: Secure}]}}]`,
			want:       xx(generatedCookie("10.0.0.1:5000", "10.0.0.2:80")),
			setCookies: []string{`session="` + generatedCookie("10.0.0.1:5000", "10.0.0.2:80") + `"; Max-Age=3600; Path=/app; SameSite=Strict; Secure; HttpOnly`},
		},
		"a zero ttl makes a session cookie": {
			policies:   `[{cookie: {name: s, ttl: 0s}}]`,
			want:       xx(generatedCookie("10.0.0.1:5000", "10.0.0.2:80")),
			setCookies: []string{`s="` + generatedCookie("10.0.0.1:5000", "10.0.0.2:80") + `"; HttpOnly`},
		},
		"the source IP": {
			policies: `[{connection_properties: {source_ip: true}}]`, sourceIP: "192.0.2.7",
			want: xx("192.0.2.7"),
		},
		"source_ip false hashes nothing": {
			policies: `[{connection_properties: {source_ip: false}}, {header: {header_name: x}}]`, headers: []string{"x", "1"},
			want: xx("1"),
		},
		"a query parameter": {
			policies: `[{query_parameter: {name: id}}]`, path: "/p?a=1&id=7&id=8",
			want: xx("7"),
		},
		"a query parameter without a value": {
			policies: `[{query_parameter: {name: flag}}]`, path: "/p?flag&id=7",
			want: xx(""),
		},
		"filter state the proxy does not have": {
			policies: `[{filter_state: {key: envoy.network.transport_socket.original_dst_address}}]`,
			noHash:   true,
		},
		"policies combine": {
			policies: `[{header: {header_name: a}}, {header: {header_name: b}}]`, headers: []string{"a", "1", "b", "2"},
			want: fold(xx("1"), xx("2")),
		},
		"equal policies do not cancel out": {
			policies: `[{header: {header_name: a}}, {header: {header_name: a}}]`, headers: []string{"a", "1"},
			want: fold(xx("1"), xx("1")),
		},
		"a terminal policy with a hash ends the list": {
			policies: `[{header: {header_name: a}, terminal: true}, {header: {header_name: b}}]`, headers: []string{"a", "1", "b", "2"},
			want: xx("1"),
		},
		"a terminal policy without a hash does not": {
			policies: `[{header: {header_name: a}, terminal: true}, {header: {header_name: b}}]`, headers: []string{"b", "2"},
			want: xx("2"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := hashPolicyOf(t, tc.policies)
			path := tc.path
			if path == "" {
				path = "/"
			}
			in := HashInput{
				Request:    &Request{Host: "example.com", Path: path, Method: "GET", Scheme: "http", Headers: newHeaders(tc.headers...)},
				SourceIP:   tc.sourceIP,
				ConnRemote: "10.0.0.1:5000", ConnLocal: "10.0.0.2:80",
			}
			got, ok := p.Hash(&in)
			if ok == tc.noHash {
				t.Fatalf("hash found = %v, want %v", ok, !tc.noHash)
			}
			if ok && got != tc.want {
				t.Errorf("hash = %d, want %d", got, tc.want)
			}
			if diff := cmp.Diff(tc.setCookies, in.SetCookies); diff != "" {
				t.Errorf("Set-Cookie (-want +got):\n%s", diff)
			}
		})
	}
}

// seeded is xxHash64 with a seed.
func seeded(s string, seed uint64) uint64 {
	d := xxhash.NewWithSeed(seed)
	_, _ = d.WriteString(s)
	return d.Sum64()
}

// TestSpanHash checks the hash of several header fields against Envoy's
// test/common/common/hash_test.cc (xxHash64 of the span {"foo", "bar"}).
func TestSpanHash(t *testing.T) {
	if got := seeded("bar", seeded("foo", 0)); got != 17745830980996999794 {
		t.Errorf("span hash = %d", got)
	}
}

func TestGeneratedCookie(t *testing.T) {
	v := generatedCookie("127.0.0.1:40000", "127.0.0.1:10000")
	if len(v) != 16 || strings.Trim(v, "0123456789abcdef") != "" {
		t.Errorf("cookie value %q is not 16 hexadecimal digits", v)
	}
	if v != generatedCookie("127.0.0.1:40000", "127.0.0.1:10000") || v == generatedCookie("127.0.0.1:40001", "127.0.0.1:10000") {
		t.Errorf("the value must follow the connection's addresses")
	}
}

func TestHashPolicyErrors(t *testing.T) {
	for policies, want := range map[string]string{
		`[{header: {header_name: x, regex_rewrite: {pattern: {regex: "("}, substitution: x}}}]`:                          "virtual_hosts[0].routes[0].route.hash_policy[0].header.regex_rewrite.pattern.regex: error parsing regexp: missing closing ): `(`",
		`[{cookie: {name: a}}, {header: {header_name: x, regex_rewrite: {pattern: {regex: "a"}, substitution: "\\2"}}}]`: "virtual_hosts[0].routes[0].route.hash_policy[1].header.regex_rewrite.substitution: \\2 refers to a group the pattern does not have (it has 0)",
	} {
		_, err := Compile(parseRC(t, `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c, hash_policy: `+policies+`}`))
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	}
}

func TestHashPolicyDoesNotAllocate(t *testing.T) {
	p := hashPolicyOf(t, `[{header: {header_name: x-user}}, {cookie: {name: s}}, {query_parameter: {name: id}}, {connection_properties: {source_ip: true}}]`)
	in := HashInput{
		Request:  &Request{Host: "h", Path: "/p?id=3", Headers: staticHeaders{"x-user": "bob", "cookie": "a=1; s=2"}},
		SourceIP: "10.1.2.3",
	}
	if allocs := testing.AllocsPerRun(100, func() { p.Hash(&in) }); allocs != 0 {
		t.Errorf("Hash allocates %v times per call", allocs)
	}
}

// FuzzHashInputs feeds arbitrary cookie headers and paths to the parsers
// hash policies read requests with: nothing may panic, a value found is
// part of its input, and a cookie's value never keeps the quotes around
// it.
func FuzzHashInputs(f *testing.F) {
	f.Add("a=1; session=\"abc\"; b", "session", "/p?id=7&flag&id=8#f", "id")
	f.Add(" =x;;session=", "", "?", "")
	f.Add("session=\"", "session", "/?=", "")
	f.Fuzz(func(t *testing.T, cookie, name, path, param string) {
		if v, ok := findCookie(cookie, name); ok {
			if !strings.Contains(cookie, v) {
				t.Fatalf("cookie %q of %q is not part of it", v, cookie)
			}
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				t.Fatalf("cookie %q kept its quotes", v)
			}
		}
		if v, ok := queryValue(path, param); ok && !strings.Contains(path, v) {
			t.Fatalf("parameter %q of %q is not part of it", v, path)
		}
		p := &HashPolicy{methods: []hashMethod{{kind: hashCookie, name: name}, {kind: hashQuery, name: param}, {kind: hashHeader, name: "cookie"}}}
		in := HashInput{Request: &Request{Path: path, Headers: newHeaders("cookie", cookie)}}
		h1, ok1 := p.Hash(&in)
		h2, ok2 := p.Hash(&in)
		if h1 != h2 || ok1 != ok2 {
			t.Fatal("the same request hashed twice gave two keys")
		}
	})
}
