package jsontometadata

import (
	"strings"
	"testing"

	j2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/json_to_metadata/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func compile(t *testing.T, y string, st *stats.Store) (httpfilter.Config, error) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var c j2mv3.JsonToMetadata
	if err := protojson.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	return Factory{}.Compile(&c, httpfilter.Context{Name: "j2m", Stats: st, StatPrefix: "http.test."})
}

// requestRules are rules over {"version": ..., "a": {"b": ...}}.
const requestRules = `
request_rules:
  rules:
  - selectors: [{key: version}]
    on_present: {metadata_namespace: ns, key: version, type: STRING}
    on_missing: {metadata_namespace: ns, key: version, value: unknown}
    on_error: {metadata_namespace: ns, key: version, value: error}
  - selectors: [{key: a}, {key: b}]
    on_present: {key: b}
    on_missing: {key: b, value: missing}
  - selectors: [{key: num}]
    on_present: {metadata_namespace: ns, key: num, type: NUMBER}
  - selectors: [{key: flag}]
    on_present: {metadata_namespace: ns, key: flag, value: seen}
`

// run sends a request with body (nil: none) and content type through the
// filter and returns the stream.
func run(t *testing.T, cfg httpfilter.Config, contentType string, body []byte) *httpfiltertest.Stream {
	t.Helper()
	var hdrs []string
	if contentType != "" {
		hdrs = []string{"content-type", contentType}
	}
	s := httpfiltertest.NewStream("POST", "/", hdrs...)
	if body != nil {
		s.Body, s.ReqHasBody, s.ReqBodyLen = body, true, int64(len(body))
	}
	if st := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("status %v", st)
	}
	return s
}

// fields renders a namespace's fields as JSON, "" when absent.
func fields(s *httpfiltertest.Stream, ns string) string {
	st := s.Metadata.GetFilterMetadata()[ns]
	if st == nil {
		return ""
	}
	b, _ := protojson.Marshal(st)
	return strings.ReplaceAll(string(b), " ", "")
}

func TestRequestRules(t *testing.T) {
	st := stats.NewStore()
	cfg, err := compile(t, requestRules, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, contentType, body string
		noBody                  bool
		ns, def                 string
	}{
		{name: "present", contentType: "application/json", body: `{"version":"v2","a":{"b":7},"num":" 1.5 ","flag":false}`,
			ns: `{"flag":"seen","num":1.5,"version":"v2"}`, def: `{"b":7}`},
		{name: "numbers as strings", contentType: "application/json", body: `{"version":3,"a":{"b":true},"num":"x"}`,
			ns: `{"flag":"seen","version":"3"}`, def: `{"b":true}`},
		{name: "a double as a string", contentType: "application/json", body: `{"version":1.5,"a":{}}`,
			ns: `{"flag":"seen","version":"1.500000"}`, def: `{"b":"missing"}`},
		{name: "missing path", contentType: "application/json", body: `{"a":"not an object"}`,
			ns: `{"flag":"seen","version":"unknown"}`, def: `{"b":"missing"}`},
		{name: "an object where a value is wanted", contentType: "application/json", body: `{"version":{"x":1},"a":{"b":[1]}}`,
			ns: `{"flag":"seen","version":"unknown"}`, def: `{"b":"missing"}`},
		{name: "an empty string writes nothing", contentType: "application/json", body: `{"version":"","a":{"b":null}}`,
			ns: `{"flag":"seen"}`, def: `{"b":"missing"}`},
		{name: "not JSON", contentType: "application/json", body: `{"version":`, ns: `{"version":"error"}`},
		{name: "trailing data", contentType: "application/json", body: `{} {}`, ns: `{"version":"error"}`},
		{name: "not an object", contentType: "application/json", body: `"text"`, ns: `{"version":"unknown"}`, def: `{"b":"missing"}`},
		{name: "no body", contentType: "application/json", noBody: true, ns: `{"version":"unknown"}`, def: `{"b":"missing"}`},
		{name: "other content type", contentType: "text/plain", body: `{"version":"v2"}`},
		{name: "no content type", body: `{"version":"v2"}`},
	} {
		var body []byte
		if !c.noBody {
			body = []byte(c.body)
		}
		s := run(t, cfg, c.contentType, body)
		if got := fields(s, "ns"); got != c.ns {
			t.Errorf("%s: ns %s, want %s", c.name, got, c.ns)
		}
		if got := fields(s, defaultNamespace); got != c.def {
			t.Errorf("%s: default namespace %s, want %s", c.name, got, c.def)
		}
		if wrote := c.ns != "" || c.def != ""; (s.RouteCleared > 0) != wrote {
			t.Errorf("%s: route cleared %d times, wrote %v", c.name, s.RouteCleared, wrote)
		}
	}
	for name, want := range map[string]uint64{
		"http.test.json_to_metadata.rq_success":                 7,
		"http.test.json_to_metadata.rq_invalid_json_body":       2,
		"http.test.json_to_metadata.rq_no_body":                 1,
		"http.test.json_to_metadata.rq_mismatched_content_type": 2,
	} {
		if got := st.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestContentTypesAndPreserve(t *testing.T) {
	cfg, err := compile(t, `
request_rules:
  allow_content_types: [application/vnd.api+json]
  allow_content_types_regex: {regex: "text/.*"}
  allow_empty_content_type: true
  rules:
  - selectors: [{key: k}]
    on_present: {metadata_namespace: ns, key: k, preserve_existing_metadata_value: true}
    on_missing: {metadata_namespace: ns, key: m, value: 1}
`, stats.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range []string{"application/vnd.api+json", "text/plain", ""} {
		if got := fields(run(t, cfg, ct, []byte(`{"k":"v"}`)), "ns"); got != `{"k":"v"}` {
			t.Errorf("%q: %s", ct, got)
		}
	}
	if got := fields(run(t, cfg, "application/json", []byte(`{"k":"v"}`)), "ns"); got != "" {
		t.Errorf("application/json is not listed, yet read: %s", got)
	}
	s := httpfiltertest.NewStream("POST", "/", "content-type", "text/plain")
	s.Body, s.ReqHasBody = []byte(`{"k":"new"}`), true
	s.SetDynamicMetadata("ns", &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("old")}})
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if got := fields(s, "ns"); got != `{"k":"old"}` {
		t.Errorf("preserve_existing_metadata_value: %s", got)
	}
}

func TestTooLargeRequestBody(t *testing.T) {
	cfg, err := compile(t, requestRules, stats.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("POST", "/", "content-type", "application/json")
	s.Body, s.ReqHasBody = make([]byte, maxBody+1), true
	if st := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); st != httpfilter.Stop || s.Status != 413 {
		t.Errorf("status %v, answered %d", st, s.Status)
	}
}

func TestResponseRules(t *testing.T) {
	st := stats.NewStore()
	cfg, err := compile(t, `
response_rules:
  rules:
  - selectors: [{key: id}]
    on_present: {metadata_namespace: resp, key: id}
    on_missing: {metadata_namespace: resp, key: id, value: none}
`, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ct     string
		pieces []string
		want   string
	}{
		{"application/json", []string{`{"id"`, `:42}`}, `{"id":42}`},
		{"application/json", []string{`{}`}, `{"id":"none"}`},
		{"text/html", []string{`{"id":1}`}, ``},
	} {
		f := cfg.NewFilter()
		s := httpfiltertest.NewStream("GET", "/")
		s.RespHasBody = true
		s.ResponseHeaders().Set("content-type", c.ct)
		f.(httpfilter.Decoder).DecodeHeaders(s)
		f.(httpfilter.Encoder).EncodeHeaders(s)
		var pieces [][]byte
		for _, p := range c.pieces {
			pieces = append(pieces, []byte(p))
		}
		out, _, err := s.EncodeBody(nil, pieces...)
		if err != nil || string(out) != strings.Join(c.pieces, "") {
			t.Errorf("body %q %v: the filter changed it", out, err)
		}
		if got := fields(s, "resp"); got != c.want {
			t.Errorf("%v: %s, want %s", c.pieces, got, c.want)
		}
	}
	if got := st.Counter("http.test.json_to_metadata.resp_success").Value(); got != 2 {
		t.Errorf("resp_success %d", got)
	}
	if got := st.Counter("http.test.json_to_metadata.resp_mismatched_content_type").Value(); got != 1 {
		t.Errorf("resp_mismatched_content_type %d", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for y, want := range map[string]string{
		`{}`: "request_rules: the filter needs rules",
		`{request_rules: {rules: [{selectors: [{key: a}]}]}}`:                                                                "request_rules.rules[0].on_present: neither on_present nor on_missing is set",
		`{request_rules: {rules: [{selectors: [{key: a}], on_missing: {key: k}}]}}`:                                          "request_rules.rules[0].on_missing.value: on_missing needs a value",
		`{response_rules: {rules: [{selectors: [{key: a}], on_present: {key: k}, on_error: {key: e}}]}}`:                     "response_rules.rules[0].on_error.value: on_error needs a value",
		`{request_rules: {allow_content_types_regex: {regex: "("}, rules: [{selectors: [{key: a}], on_present: {key: k}}]}}`: "request_rules.allow_content_types_regex.safe_regex.regex: ",
	} {
		_, err := compile(t, y, stats.NewStore())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", y, err, want)
		}
	}
}
