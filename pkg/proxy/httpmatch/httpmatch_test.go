package httpmatch

import (
	"errors"
	"strings"
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// data is a request and response for the inputs.
type data struct {
	req, resp map[string]string
	status    int
	md        *corev3.Metadata
}

func (d data) DynamicMetadata() *corev3.Metadata { return d.md }

// FillCEL gives the request headers and the response code.
func (d data) FillCEL(a *cel.Activation) {
	a.Request = &cel.Request{Headers: headerMap(d.req), Method: "GET", Path: "/"}
	if d.status != 0 {
		a.Response = &cel.Response{Code: d.status}
	}
	a.Metadata = d.md
}

// headerMap is a cel.HeaderGetter over a map.
type headerMap map[string]string

func (h headerMap) Get(n string) (string, bool) { v, ok := h[n]; return v, ok }

func (d data) RequestHeader(n string) (string, bool)  { v, ok := d.req[n]; return v, ok }
func (d data) ResponseHeader(n string) (string, bool) { v, ok := d.resp[n]; return v, ok }
func (d data) ResponseStatus() int                    { return d.status }

// actionName compiles actions that are StringValues: their value.
func actionName(a *xdscorev3.TypedExtensionConfig, path string) (string, error) {
	var v wrapperspb.StringValue
	if err := a.GetTypedConfig().UnmarshalTo(&v); err != nil {
		return "", errors.New(path + ": not a StringValue")
	}
	return v.GetValue(), nil
}

// parse reads a Matcher from JSON, with the inputs and actions as
// typed_config Any values.
func parse(t *testing.T, js string) *xdsmatcherv3.Matcher {
	t.Helper()
	var m xdsmatcherv3.Matcher
	if err := protojson.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

const (
	classInput  = `{"name": "c", "typed_config": {"@type": "type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeClassMatchInput"}}`
	codeInput   = `{"name": "s", "typed_config": {"@type": "type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput"}}`
	headerInput = `{"name": "h", "typed_config": {"@type": "type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput", "header_name": "X-Tenant"}}`
)

func action(v string) string {
	return `{"action": {"name": "a", "typed_config": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "` + v + `"}}}`
}

func TestMatch(t *testing.T) {
	list := `{"matcher_list": {"matchers": [
	  {"predicate": {"and_matcher": {"predicate": [
	     {"single_predicate": {"input": ` + classInput + `, "value_match": {"exact": "4xx"}}},
	     {"not_matcher": {"single_predicate": {"input": ` + codeInput + `, "value_match": {"exact": "404"}}}}]}},
	   "on_match": ` + action("client-error") + `},
	  {"predicate": {"or_matcher": {"predicate": [
	     {"single_predicate": {"input": ` + codeInput + `, "value_match": {"exact": "502"}}},
	     {"single_predicate": {"input": ` + codeInput + `, "value_match": {"exact": "503"}}}]}},
	   "on_match": {"matcher": {"matcher_list": {"matchers": [
	     {"predicate": {"single_predicate": {"input": ` + headerInput + `, "value_match": {"prefix": "gold"}}}, "on_match": ` + action("gold-outage") + `}]}}}},
	  {"predicate": {"single_predicate": {"input": ` + classInput + `, "value_match": {"exact": "5xx"}}}, "on_match": ` + action("server-error") + `}]},
	 "on_no_match": ` + action("none") + `}`
	tree := `{"matcher_tree": {"input": ` + codeInput + `, "prefix_match_map": {"map": {"5": ` + action("5") + `, "50": ` + action("50") + `}}}}`
	runMatchCases(t, []matchCase{
		{"and/not", list, data{status: 403}, "client-error", true},
		{"not excludes", list, data{status: 404}, "none", true},
		{"nested matches", list, data{status: 503, req: map[string]string{"x-tenant": "gold-1"}}, "gold-outage", true},
		{"nested misses, the list goes on", list, data{status: 503}, "server-error", true},
		{"on_no_match", list, data{status: 200}, "none", true},
		{"no status", list, data{}, "none", true},
		{"longest prefix", tree, data{status: 503}, "50", true},
		{"shorter prefix", tree, data{status: 599}, "5", true},
		{"no entry", tree, data{status: 404}, "", false},
	})
}

// matchCase is a matcher (JSON), data, and the expected result.
type matchCase struct {
	name, js string
	d        data
	want     string
	ok       bool
}

// runMatchCases compiles each case's matcher and checks its result.
func runMatchCases(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Compile(parse(t, tc.js), actionName)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := m.Match(tc.d)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Match = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for name, tc := range map[string]struct{ js, want string }{
		"query input": {`{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": {"typed_config": {"@type": "type.googleapis.com/envoy.type.matcher.v3.HttpRequestQueryParamMatchInput", "query_param": "a"}}, "value_match": {"exact": "x"}}}, "on_match": ` + action("x") + `}]}}`,
			"matcher_list.matchers[0].predicate.single_predicate.input.typed_config: input envoy.type.matcher.v3.HttpRequestQueryParamMatchInput is not supported by Outrigger"},
		"bad action": {`{"on_no_match": {"action": {"typed_config": {"@type": "type.googleapis.com/google.protobuf.UInt32Value", "value": 1}}}}`,
			"on_no_match.action: not a StringValue"},
		"bad regex": {`{"matcher_list": {"matchers": [{"predicate": {"single_predicate": {"input": ` + codeInput + `, "value_match": {"safe_regex": {"regex": "("}}}}, "on_match": ` + action("x") + `}]}}`,
			"matcher_list.matchers[0].predicate.single_predicate.value_match.safe_regex"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(parse(t, tc.js), actionName)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
