package router

import "testing"

// fakeRuntime is a runtime with integer values.
type fakeRuntime map[string]uint64

func (f fakeRuntime) Uint64(key string, def uint64) uint64 {
	if v, ok := f[key]; ok {
		return v
	}
	return def
}

func TestRuntimeFraction(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: layered
  domains: [layered]
  routes:
  - name: canary
    match: {prefix: /, runtime_fraction: {default_value: {numerator: 10}, runtime_key: routing.canary}}
    route: {cluster: canary}
  - name: beta
    match: {prefix: /, runtime_fraction: {default_value: {numerator: 20}}}
    route: {cluster: beta}
  - {name: stable, match: {prefix: /}, route: {cluster: stable}}
- name: fine
  domains: [fine]
  routes:
  - match: {prefix: /, runtime_fraction: {default_value: {numerator: 5, denominator: TEN_THOUSAND}}}
    route: {cluster: fine}
  - {match: {prefix: /}, route: {cluster: stable}}
`)
	tests := map[string]struct {
		host    string
		random  uint64
		runtime fakeRuntime
		want    string
	}{
		// The default share: random % 100 < 10.
		"in the default share":     {host: "layered", random: 1009, want: "canary"},
		"out of the default share": {host: "layered", random: 1050, want: "stable"},
		// The request's one random value decides every route, so
		// shares of successive routes layer as in Envoy: 10..19 is
		// out of the canary's 10 and in the beta's 20.
		"the next route's share":    {host: "layered", random: 1015, want: "beta"},
		"runtime key raises it":     {host: "layered", random: 1050, runtime: fakeRuntime{"routing.canary": 60}, want: "canary"},
		"runtime key lowers it":     {host: "layered", random: 1005, runtime: fakeRuntime{"routing.canary": 0}, want: "beta"},
		"above 100 is everyone":     {host: "layered", random: 1099, runtime: fakeRuntime{"routing.canary": 101}, want: "canary"},
		"other keys change nothing": {host: "layered", random: 1050, runtime: fakeRuntime{"other": 100}, want: "stable"},
		"ten thousandths in":        {host: "fine", random: 20_004, want: "fine"},
		"ten thousandths out":       {host: "fine", random: 20_005, want: "stable"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := Request{Host: tc.host, Path: "/x", Random: tc.random}
			if tc.runtime != nil {
				req.Runtime = tc.runtime
			}
			r := table.MatchRequest(&req)
			if r == nil || r.Cluster != tc.want {
				t.Fatalf("route = %+v, want cluster %q", r, tc.want)
			}
		})
	}
}

// TestRandomDrawnOnce: a request that asks for its random value to be
// drawn draws none until a runtime_fraction is decided, then one, which
// every later decision reads; a table without runtime_fraction draws
// none; a value given (DrawRandom unset) is the one read.
func TestRandomDrawnOnce(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: layered
  domains: [layered]
  routes:
  - match: {prefix: /, runtime_fraction: {default_value: {numerator: 50}}}
    route: {cluster: half}
  - {match: {prefix: /}, route: {cluster: stable}}
- name: plain
  domains: [plain]
  routes:
  - {match: {prefix: /}, route: {cluster: stable}}
`)
	plain := Request{Host: "plain", Path: "/", DrawRandom: true}
	if r := table.MatchRequest(&plain); r == nil || !plain.DrawRandom || plain.Random != 0 {
		t.Fatalf("a table without runtime_fraction: route %v, DrawRandom %v, Random %d; want none drawn", r, plain.DrawRandom, plain.Random)
	}
	// Drawn values differ from request to request, and each request
	// keeps its own: its route is the same at every match.
	seen := map[uint64]bool{}
	clusters := map[string]bool{}
	for range 200 {
		req := Request{Host: "layered", Path: "/", DrawRandom: true}
		first := table.MatchRequest(&req)
		if first == nil || req.DrawRandom {
			t.Fatalf("route %v, DrawRandom %v after a runtime_fraction was decided", first, req.DrawRandom)
		}
		v := req.Random
		seen[v] = true
		clusters[first.Cluster] = true
		for range 3 {
			if again := table.MatchRequest(&req); again != first || req.Random != v || req.RandomValue() != v {
				t.Fatalf("the request's random value changed: %d then %d", v, req.Random)
			}
		}
	}
	if len(seen) < 190 || len(clusters) != 2 {
		t.Errorf("%d distinct random values of 200, clusters %v: want fresh draws on both sides of the share", len(seen), clusters)
	}
	given := Request{Host: "layered", Path: "/", Random: 1049}
	if r := table.MatchRequest(&given); r == nil || r.Cluster != "half" || given.Random != 1049 {
		t.Errorf("a given random value 1049: route %v, Random %d; want half and the value kept", r, given.Random)
	}
}
