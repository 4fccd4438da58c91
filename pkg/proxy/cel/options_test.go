package cel

import (
	"strings"
	"testing"
)

// TestDefaultsAreEnvoys checks Envoy's security-oriented defaults: no
// string(), no + on strings or lists, no comprehensions; arithmetic and
// the rest of the standard library unchanged.
func TestDefaultsAreEnvoys(t *testing.T) {
	e := mustEnv(t)
	for expr, want := range map[string]string{
		`1 + 2`:                                "3",
		`2u + 3u`:                              "5",
		`1.5 + 1.0`:                            "2.5",
		`b'a' + b'b'`:                          "ab",
		`duration('1s') + duration('500ms')`:   "1.5s",
		`request.path.startsWith('/api')`:      "true",
		`request.headers['x'].contains('y')`:   "true",
		`request.path.matches('^/api/v[0-9]')`: "true",
	} {
		p, err := e.CompileText(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got, err := p.EvalString(testActivation()); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
	for _, expr := range []string{
		`'a' + 'b'`, `request.host + request.method`, `string(1)`, `string(request.path)`, `[1] + [2]`,
		`request.path.lowerAscii()`, `request.path.replace('a', 'b')`,
	} {
		p, err := e.CompileText(expr)
		if err != nil {
			continue
		}
		if got, err := p.EvalString(testActivation()); err == nil {
			t.Errorf("%s = %q, want an error under Envoy's defaults", expr, got)
		}
	}
	_, err := e.CompileText(`request.headers.exists(k, k == 'x')`)
	if err == nil || !strings.Contains(err.Error(), "comprehension") {
		t.Errorf("a comprehension compiled: %v", err)
	}
}

// TestOptions checks what each CelExpressionConfig switch allows.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		expr string
		want string
	}{
		{Options{StringConversion: true}, `string(request.headers.size())`, "4"},
		{Options{StringConversion: true}, `string(1.5)`, "1.5"},
		{Options{StringConcat: true}, `request.host + '/' + request.method`, "example.com/GET"},
		{Options{StringFunctions: true}, `request.path.replace('v1', 'v2')`, "/api/v2?a=b"},
		{Options{StringFunctions: true}, `request.query.split('=')[1]`, "b"},
		{Options{StringFunctions: true}, `'MiXeD-é'.lowerAscii()`, "mixed-é"},
		{Options{StringFunctions: true}, `'MiXeD-é'.upperAscii()`, "MIXED-é"},
	} {
		e, err := NewEnvWith(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.CompileText(tc.expr)
		if err != nil {
			t.Errorf("%+v %s: %v", tc.opts, tc.expr, err)
			continue
		}
		if got, err := p.EvalString(testActivation()); err != nil || got != tc.want {
			t.Errorf("%+v %s = %q, %v; want %q", tc.opts, tc.expr, got, err, tc.want)
		}
	}
	// Lists never concatenate, whatever the options.
	e, err := NewEnvWith(Options{StringConversion: true, StringConcat: true, StringFunctions: true})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.CompileText(`[1] + [2]`); err == nil {
		if _, err := p.EvalString(testActivation()); err == nil {
			t.Error("lists concatenated")
		}
	}
}
