package lua

import (
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/string_matcher/lua/v3"
)

func compile(t *testing.T, code string) *Matcher {
	t.Helper()
	m, err := Compile(&luav3.Lua{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: code}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatch(t *testing.T) {
	m := compile(t, `
calls = 0
function envoy_match(s)
  calls = calls + 1
  if s == "boom" then error("boom") end
  if s == "nil" then return nil end
  return s == "yes" or s == "many"
end`)
	for s, want := range map[string]bool{"yes": true, "no": false, "boom": false, "nil": false, "": false} {
		if got := m.Match(s); got != want {
			t.Errorf("Match(%q) = %v, want %v", s, got, want)
		}
	}
	// The pool's states serve concurrent matches.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if !m.Match("many") {
					t.Error("a concurrent match failed")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLoopIsStopped(t *testing.T) {
	m := compile(t, `function envoy_match(s) if s == "spin" then while true do end end return true end`)
	m.budget = 20 * time.Millisecond
	if m.Match("spin") {
		t.Error("a script stopped at its budget matched")
	}
	// The stopped state is thrown away; the next match gets a good one.
	if !m.Match("x") {
		t.Error("no match after a stopped run")
	}
}

func TestCompileErrors(t *testing.T) {
	for code, want := range map[string]string{
		`x = 1`:                     "source_code: Lua code did not contain a global function named 'envoy_match'",
		`envoy_match = 3`:           "source_code: Lua code did not contain a global function named 'envoy_match'",
		`function envoy_match(s) e`: "source_code: script does not compile",
	} {
		_, err := Compile(&luav3.Lua{SourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: code}}})
		if err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("%q: error %v, want %q", code, err, want)
		}
	}
	if _, err := Compile(&luav3.Lua{}); err == nil {
		t.Error("no source_code accepted")
	}
}
