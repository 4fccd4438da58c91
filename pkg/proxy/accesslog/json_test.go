package accesslog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// mustJSON compiles a format dictionary written in JSON or YAML.
func mustJSON(t testing.TB, dict string, typed, omitEmpty bool) *Formatter {
	t.Helper()
	s := parseStruct(t, dict)
	f, err := compileJSON(s, typed, omitEmpty, "json_format", nil)
	if err != nil {
		t.Fatalf("compileJSON: %v", err)
	}
	return f
}

func parseStruct(t testing.TB, dict string) *structpb.Struct {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(dict), &m); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatalf("struct: %v", err)
	}
	return s
}

const dictionary = `
status: "%RESPONSE_CODE%"
bytes: "%BYTES_SENT%"
protocol: "%PROTOCOL%"
agent: "%REQ(USER-AGENT)%"
quoted: "%REQ(X-QUOTE)%"
empty: "%REQ(X-EMPTY)%"
upstream_failure: "%UPSTREAM_TRANSPORT_FAILURE_REASON%"
mixed: "%RESPONSE_CODE% in %DURATION%ms"
start: "%START_TIME(%s)%"
literal: plain text
number: 1.5
flag: true
nothing: null
list: ["%ROUTE_NAME%", 7]
nested: {b: "%UPSTREAM_HOST%", a: "%UPSTREAM_CLUSTER%", c: {}}
"z key \"quoted\"": "%CONNECTION_ID%"
`

// TestJSONFormat renders the dictionary for a full and an empty entry, in
// each mode; keys come out sorted at every level.
func TestJSONFormat(t *testing.T) {
	modes := []struct {
		name             string
		typed, omitEmpty bool
	}{
		{"json_format (strings)", false, false},
		{"typed", true, false},
		{"typed, omit_empty_values", true, true},
		{"strings, omit_empty_values", false, true},
	}
	var out strings.Builder
	for _, m := range modes {
		f := mustJSON(t, dictionary, m.typed, m.omitEmpty)
		for _, e := range []*Entry{fullEntry(), {}} {
			line := f.Append(nil, e)
			if !json.Valid(line) {
				t.Errorf("%s: invalid JSON %s", m.name, line)
			}
			if !strings.HasSuffix(string(line), "}\n") {
				t.Errorf("%s: line does not end with a newline: %q", m.name, line)
			}
			fmt.Fprintf(&out, "%s:\n%s", m.name, line)
		}
	}
	golden.Check(t, "testdata/json.golden", []byte(out.String()))
}

func TestJSONEscapesLongValues(t *testing.T) {
	f := mustJSON(t, `{"v": "%REQ(X-LONG)%"}`, true, false)
	long := strings.Repeat(`"\`, 400) + "\xff"
	line := f.Append(nil, &Entry{RequestHeaders: headerMap{"x-long": long}})
	var got map[string]string
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if want := strings.Repeat(`"\`, 400) + "\uFFFD"; got["v"] != want {
		t.Errorf("value did not round-trip: got %d bytes, want %d", len(got["v"]), len(want))
	}
}
