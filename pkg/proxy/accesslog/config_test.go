package accesslog

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// parseFileAccessLog decodes a FileAccessLog written in YAML.
func parseFileAccessLog(t testing.TB, y string) *filev3.FileAccessLog {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("yaml: %v", err)
	}
	cfg := &filev3.FileAccessLog{}
	if err := protojson.Unmarshal(j, cfg); err != nil {
		t.Fatalf("protojson: %v", err)
	}
	return cfg
}

func TestCompile(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want string
	}{
		"no format is the default": {
			yaml: "path: /dev/stdout",
			want: `[2024-05-01T10:00:00.123Z] "POST /api/v1/locations?id=7 HTTP/1.1" 204 UT,URX 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations.svc:8080" "10.0.2.1:80"` + "\n",
		},
		"empty format is the default": {
			yaml: "{path: /dev/stdout, format: ''}",
			want: `[2024-05-01T10:00:00.123Z] "POST /api/v1/locations?id=7 HTTP/1.1" 204 UT,URX 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations.svc:8080" "10.0.2.1:80"` + "\n",
		},
		"format":                 {yaml: "{path: x, format: \"%RESPONSE_CODE% %UPSTREAM_TRANSPORT_FAILURE_REASON%\\n\"}", want: "204 -\n"},
		"json_format is untyped": {yaml: "{path: x, json_format: {code: '%RESPONSE_CODE%', reason: '%UPSTREAM_TRANSPORT_FAILURE_REASON%'}}", want: `{"code":"204","reason":"-"}` + "\n"},
		"typed_json_format":      {yaml: "{path: x, typed_json_format: {code: '%RESPONSE_CODE%', reason: '%UPSTREAM_TRANSPORT_FAILURE_REASON%'}}", want: `{"code":204,"reason":null}` + "\n"},
		"log_format text_format": {yaml: "{path: x, log_format: {text_format: '%PROTOCOL% %UPSTREAM_TRANSPORT_FAILURE_REASON%'}}", want: "HTTP/1.1 -"},
		"log_format text_format omitting empty values": {
			yaml: "{path: x, log_format: {text_format: '%PROTOCOL%|%UPSTREAM_TRANSPORT_FAILURE_REASON%|', omit_empty_values: true}}",
			want: "HTTP/1.1||",
		},
		"log_format text_format_source": {yaml: "{path: x, log_format: {text_format_source: {inline_string: \"%ROUTE_NAME%\\n\"}}}", want: "locations-route\n"},
		"log_format inline bytes":       {yaml: "{path: x, log_format: {text_format_source: {inline_bytes: JVBST1RPQ09MJQ==}}}", want: "HTTP/1.1"},
		"log_format json_format is typed": {
			yaml: "{path: x, log_format: {json_format: {code: '%RESPONSE_CODE%', reason: '%UPSTREAM_TRANSPORT_FAILURE_REASON%'}, omit_empty_values: true, json_format_options: {sort_properties: true}}}",
			want: `{"code":204}` + "\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := Compile(parseFileAccessLog(t, tc.yaml), nil)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got := string(f.Append(nil, fullEntry())); got != tc.want {
				t.Errorf("line:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCompileErrors lists the errors of refused formats, each naming its
// field path, in testdata/errors.golden.
func TestCompileErrors(t *testing.T) {
	tests := map[string]string{
		"unknown operator":             `{format: "%NOT_AN_OPERATOR%"}`,
		"lone percent":                 `{format: "100% sure"}`,
		"percent at the end":           `{format: "%"}`,
		"unterminated operator":        `{format: "%PROTOCOL"}`,
		"missing closing parenthesis":  `{format: "%REQ(X-A%"}`,
		"bad truncation":               `{format: "%REQ(X-A):a%"}`,
		"truncation without a number":  `{format: "%REQ(X-A):%"}`,
		"operator without arguments":   `{format: "%PROTOCOL(x)%"}`,
		"header operator without name": `{format: "%REQ%"}`,
		"empty header name":            `{format: "%REQ()%"}`,
		"empty alternative":            `{format: "%RESP(A?)%"}`,
		"two alternatives":             `{format: "%REQ(A?B?C)%"}`,
		"unsupported time directive":   `{format: "%START_TIME(%Q)%"}`,
		"lone percent in time format":  `{format: "%START_TIME(%Y%)%"}`,
		"digit without f":              `{format: "%START_TIME(%3d)%"}`,
		"bad extended directive":       `{format: "%START_TIME(%E4Y)%"}`,
		"json value":                   `{json_format: {a: {b: "%BAD%"}}}`,
		"json list value":              `{typed_json_format: {a: [ok, "%BAD%"]}}`,
		"log_format text":              `{log_format: {text_format: "%BAD%"}}`,
		"log_format source":            `{log_format: {text_format_source: {inline_string: "%BAD%"}}}`,
		"log_format source from file":  `{log_format: {text_format_source: {filename: /etc/format}}}`,
		"log_format json":              `{log_format: {json_format: {k: "%BAD%"}}}`,
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	slices.Sort(names)
	var out strings.Builder
	for _, name := range names {
		_, err := Compile(parseFileAccessLog(t, tests[name]), nil)
		if err == nil {
			t.Errorf("%s: Compile accepted %s", name, tests[name])
			continue
		}
		fmt.Fprintf(&out, "%s:\n  %v\n", name, err)
	}
	golden.Check(t, "testdata/errors.golden", []byte(out.String()))
}

func TestCompileSubstitutionRequiresAFormat(t *testing.T) {
	cfg := parseFileAccessLog(t, "{log_format: {omit_empty_values: true}}")
	_, err := Compile(cfg, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "log_format.format: ") {
		t.Errorf("error = %v, want one naming log_format.format", err)
	}
}
