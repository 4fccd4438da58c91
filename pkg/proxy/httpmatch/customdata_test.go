package httpmatch

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// keep is an on_match with keep_matching.
func keep(v string) string {
	return `{"keep_matching": true, "action": {"name": "a", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "` + v + `"}}}`
}

// As Envoy's handleRecursionAndSkips: a match through keep_matching is
// skipped and the evaluation goes on, to the next matcher, a shorter
// prefix, or on_no_match (itself skipped when it keeps matching).
func TestKeepMatching(t *testing.T) {
	list := `{"matcher_list": {"matchers": [
	  {"predicate": {"single_predicate": {"input": ` + codeInput + `, "value_match": {"prefix": "5"}}}, "on_match": ` + keep("skipped") + `},
	  {"predicate": {"single_predicate": {"input": ` + codeInput + `, "value_match": {"exact": "503"}}}, "on_match": {"keep_matching": true, "matcher": {"on_no_match": ` + action("nested") + `}}},
	  {"predicate": {"single_predicate": {"input": ` + classInput + `, "value_match": {"exact": "5xx"}}}, "on_match": ` + action("server-error") + `}]},
	 "on_no_match": ` + action("none") + `}`
	tree := `{"matcher_tree": {"input": ` + codeInput + `, "prefix_match_map": {"map": {"5": ` + action("5") + `, "50": ` + keep("50") + `}}},
	 "on_no_match": ` + keep("none") + `}`
	runMatchCases(t, []matchCase{
		{"a kept action is skipped", list, data{status: 500}, "server-error", true},
		{"a kept nested match is skipped", list, data{status: 503}, "server-error", true},
		{"no match", list, data{status: 200}, "none", true},
		{"a kept prefix falls back to a shorter one", tree, data{status: 503}, "5", true},
		{"a kept on_no_match is no match", tree, data{status: 404}, "", false},
	})
}

const (
	celInputJSON = `{"name": "cel", "typed_config": {"@type": "type.googleapis.com/xds.type.matcher.v3.HttpAttributesCelMatchInput"}}`
	mdInputJSON  = `{"name": "md", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.network.v3.DynamicMetadataInput", "filter": "f", "path": [{"key": "a"}, {"key": "b"}]}}`
)

// celMatch is a matcher_list matching the CEL expression (as text), with
// on_no_match "no".
func celMatch(expr string) string {
	return `{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": ` + celInputJSON + `,
	  "custom_match": {"name": "m", "typed_config": {"@type": "type.googleapis.com/xds.type.matcher.v3.CelMatcher", "expr_match": {"cel_expr_string": ` + expr + `}}}}},
	  "on_match": ` + action("yes") + `}]}, "on_no_match": ` + action("no") + `}`
}

func TestCELMatcher(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		d          data
		want       string
	}{
		{"header", `"request.headers['x-tenant'] == 'gold'"`, data{req: map[string]string{"x-tenant": "gold"}}, "yes"},
		{"header differs", `"request.headers['x-tenant'] == 'gold'"`, data{req: map[string]string{"x-tenant": "silver"}}, "no"},
		{"response code", `"response.code >= 500"`, data{status: 503}, "yes"},
		// An attribute the data does not have is an evaluation error:
		// no match, as Envoy's.
		{"absent attribute", `"response.code >= 500"`, data{}, "no"},
		{"not a boolean", `"request.method"`, data{}, "no"},
		{"metadata", `"metadata.filter_metadata['f']['k'] == 'v'"`, data{md: mdOf(t, map[string]any{"k": "v"})}, "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(parse(t, celMatch(tc.expr)), actionName)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := m.Match(tc.d); got != tc.want {
				t.Errorf("Match = %q, want %q", got, tc.want)
			}
		})
	}
}

// The parsed AST form (cel.dev/expr) compiles as the text does.
func TestCELMatcherParsed(t *testing.T) {
	js := `{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": ` + celInputJSON + `,
	  "custom_match": {"name": "m", "typed_config": {"@type": "type.googleapis.com/xds.type.matcher.v3.CelMatcher", "expr_match": {"cel_expr_parsed": {"expr": {"id": "1", "const_expr": {"bool_value": true}}}}}}}},
	  "on_match": ` + action("yes") + `}]}}`
	m, err := Compile(parse(t, js), actionName)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Match(data{}); got != "yes" {
		t.Errorf("Match = %q", got)
	}
}

func mdOf(t *testing.T, fields map[string]any) *corev3.Metadata {
	t.Helper()
	st, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"f": st}}
}

func mdMatch(value string, invert bool) string {
	inv := "false"
	if invert {
		inv = "true"
	}
	return `{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": ` + mdInputJSON + `,
	  "custom_match": {"name": "m", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.input_matchers.metadata.v3.Metadata", "value": ` + value + `, "invert": ` + inv + `}}}},
	  "on_match": ` + action("yes") + `}]}, "on_no_match": ` + action("no") + `}`
}

func TestMetadataMatcher(t *testing.T) {
	md := mdOf(t, map[string]any{"a": map[string]any{"b": "gold", "n": 3.0}})
	for _, tc := range []struct {
		name, js string
		d        data
		want     string
	}{
		{"string", mdMatch(`{"string_match": {"exact": "gold"}}`, false), data{md: md}, "yes"},
		{"string differs", mdMatch(`{"string_match": {"exact": "silver"}}`, false), data{md: md}, "no"},
		{"inverted", mdMatch(`{"string_match": {"exact": "silver"}}`, true), data{md: md}, "yes"},
		{"missing", mdMatch(`{"present_match": true}`, false), data{}, "no"},
		{"missing, inverted", mdMatch(`{"present_match": true}`, true), data{}, "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(parse(t, tc.js), actionName)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := m.Match(tc.d); got != tc.want {
				t.Errorf("Match = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEnvironmentVariableInput(t *testing.T) {
	t.Setenv("OUTRIGGER_TEST_ZONE", "eu-1")
	in := func(name string) string {
		return `{"name": "e", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.environment_variable.v3.Config", "name": "` + name + `"}}`
	}
	js := func(name string) string {
		return `{"matcher_tree": {"input": ` + in(name) + `, "exact_match_map": {"map": {"eu-1": ` + action("eu") + `}}}, "on_no_match": ` + action("other") + `}`
	}
	for _, tc := range []struct{ name, variable, want string }{
		{"set", "OUTRIGGER_TEST_ZONE", "eu"},
		{"unset", "OUTRIGGER_TEST_UNSET_VARIABLE", "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(parse(t, js(tc.variable)), actionName)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := m.Match(data{}); got != tc.want {
				t.Errorf("Match = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCustomDataErrors(t *testing.T) {
	for name, tc := range map[string]struct{ js, want string }{
		"CEL input with value_match": {`{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": ` + celInputJSON + `, "value_match": {"exact": "x"}}}, "on_match": ` + action("x") + `}]}}`,
			"matcher_list.matchers[0].predicate.single_predicate.value_match: the data of input xds.type.matcher.v3.HttpAttributesCelMatchInput is matched only by the custom_match xds.type.matcher.v3.CelMatcher"},
		"CEL input with the metadata matcher": {strings.Replace(mdMatch(`{"present_match": true}`, false), mdInputJSON, celInputJSON, 1),
			"custom_match.typed_config: input matcher envoy.extensions.matching.input_matchers.metadata.v3.Metadata cannot match the data of input xds.type.matcher.v3.HttpAttributesCelMatchInput"},
		"bad expression":   {celMatch(`"request.headers["`), "custom_match.typed_config.expr_match.cel_expr_string: "},
		"unknown function": {celMatch(`"nope(1)"`), `unknown function "nope"`},
		"no expression":    {strings.Replace(celMatch(`"true"`), `{"cel_expr_string": "true"}`, `{}`, 1), "expr_match: an expression is required"},
		"CEL input in a tree": {`{"matcher_tree": {"input": ` + celInputJSON + `, "exact_match_map": {"map": {"x": ` + action("x") + `}}}}`,
			"matcher_tree.input.typed_config: input xds.type.matcher.v3.HttpAttributesCelMatchInput gives no string to look up in a map"},
		"metadata without value": {strings.Replace(mdMatch(`{"present_match": true}`, false), `"value": {"present_match": true}, `, ``, 1), "custom_match.typed_config.value: must be set"},
		"env without name": {`{"matcher_tree": {"input": {"name": "e", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.matching.common_inputs.environment_variable.v3.Config"}}, "exact_match_map": {"map": {"x": ` + action("x") + `}}}}`,
			"matcher_tree.input.typed_config.name: must be set"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(parse(t, tc.js), actionName)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Data that has no attributes (a connection's) refuses the CEL input by
// its path; a tree compiled without the common inputs (a per-route
// matcher's) leaves them to its own input compiler.
func TestCustomDataUnavailable(t *testing.T) {
	js := celMatch(`"true"`)
	_, err := CompileProbedEnv(parse(t, js), actionName, fieldProbe, Env{})
	want := "matcher_list.matchers[0].predicate.single_predicate.input.typed_config: input xds.type.matcher.v3.HttpAttributesCelMatchInput reads HTTP attributes, which this matcher does not have"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	_, err = CompileProbed(parse(t, js), actionName, fieldProbe)
	if err == nil || !strings.Contains(err.Error(), "not a StringValue") {
		t.Errorf("error %v, want the caller's", err)
	}
}
