package httpmatch

import (
	"errors"
	"strings"
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fields are data whose inputs are named fields; a field listed in
// unavailable cannot be read at all (a TLS input on a plaintext
// connection).
type fields struct {
	values      map[string]string
	unavailable string
}

// fieldProbe compiles inputs that are StringValues: the name of the
// field they read.
func fieldProbe(tc *xdscorev3.TypedExtensionConfig, path string) (Probe[fields], error) {
	var v wrapperspb.StringValue
	if err := tc.GetTypedConfig().UnmarshalTo(&v); err != nil {
		return nil, errors.New(path + ": not a StringValue")
	}
	name := v.GetValue()
	return func(d fields) (string, bool, bool) {
		if strings.Contains(d.unavailable, name) {
			return "", false, false
		}
		s, ok := d.values[name]
		return s, ok, true
	}, nil
}

// field is an input of the field name.
func field(name string) string {
	return `{"name": "f", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "` + name + `"}}`
}

// is is a single predicate: field name equals value.
func is(name, value string) string {
	return `{"single_predicate": {"input": ` + field(name) + `, "value_match": {"exact": "` + value + `"}}}`
}

// evaluateCase runs one tree on data and checks its result.
type evaluateCase struct {
	name     string
	d        fields
	want     string
	found    bool
	complete bool
}

func runEvaluate(t *testing.T, js string, cases []evaluateCase) {
	t.Helper()
	m, err := CompileProbed(parse(t, js), actionName, fieldProbe)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, found, complete := m.Evaluate(tc.d)
			if got != tc.want || found != tc.found || complete != tc.complete {
				t.Errorf("Evaluate = %q, %v, %v; want %q, %v, %v", got, found, complete, tc.want, tc.found, tc.complete)
			}
		})
	}
}

// TestUnavailableInputs checks Envoy's UnableToMatch: an input that
// cannot read the data stops the evaluation without a result, on_no_match
// included, except in an or_matcher where another predicate holds, and
// except when an earlier matcher already decided.
func TestUnavailableInputs(t *testing.T) {
	list := `{"matcher_list": {"matchers": [
	  {"predicate": ` + is("a", "1") + `, "on_match": ` + action("a") + `},
	  {"predicate": {"or_matcher": {"predicate": [` + is("tls", "x") + `, ` + is("b", "1") + `]}}, "on_match": ` + action("or") + `},
	  {"predicate": {"and_matcher": {"predicate": [` + is("c", "1") + `, ` + is("tls", "y") + `]}}, "on_match": ` + action("and") + `},
	  {"predicate": {"not_matcher": ` + is("tls", "z") + `}, "on_match": ` + action("not") + `}]},
	 "on_no_match": ` + action("none") + `}`
	plain := "tls"
	runEvaluate(t, list, []evaluateCase{
		{"an earlier matcher decides", fields{values: map[string]string{"a": "1"}, unavailable: plain}, "a", true, true},
		{"or: another predicate holds", fields{values: map[string]string{"b": "1"}, unavailable: plain}, "or", true, true},
		{"or: none holds", fields{unavailable: plain}, "", false, false},
		{"and: stops at a false predicate first", fields{values: map[string]string{"c": "0"}, unavailable: plain}, "", false, false},
		{"available: not holds", fields{values: map[string]string{"c": "0"}}, "not", true, true},
		{"available: absent values are no match", fields{values: map[string]string{"tls": "z"}}, "none", true, true},
	})
	tree := `{"matcher_tree": {"input": ` + field("tls") + `, "exact_match_map": {"map": {"x": ` + action("x") + `}}}, "on_no_match": ` + action("none") + `}`
	runEvaluate(t, tree, []evaluateCase{
		{"tree: unavailable", fields{unavailable: plain}, "", false, false},
		{"tree: absent", fields{}, "none", true, true},
		{"tree: entry", fields{values: map[string]string{"tls": "x"}}, "x", true, true},
	})
	nested := `{"matcher_list": {"matchers": [{"predicate": ` + is("a", "1") + `, "on_match": {"matcher": ` + tree + `}}]}, "on_no_match": ` + action("outer") + `}`
	runEvaluate(t, nested, []evaluateCase{
		{"nested: unavailable stops the outer tree", fields{values: map[string]string{"a": "1"}, unavailable: plain}, "", false, false},
		{"nested: not reached", fields{unavailable: plain}, "outer", true, true},
	})
}
