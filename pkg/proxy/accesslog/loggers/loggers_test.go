package loggers

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
)

// destinations records what each destination receives.
type destinations map[string]*bytes.Buffer

func (d destinations) open(dest accesslog.Destination, path string) (io.Writer, error) {
	key := path
	switch dest {
	case accesslog.Stdout:
		key = "stdout"
	case accesslog.Stderr:
		key = "stderr"
	}
	if key == "/denied" {
		return nil, errors.New("permission denied")
	}
	if d[key] == nil {
		d[key] = &bytes.Buffer{}
	}
	return d[key], nil
}

// accessLogs decodes an access_log list written as Envoy's JSON (through
// the admin block, which holds one).
func accessLogs(t *testing.T, js string) []*accesslogv3.AccessLog {
	t.Helper()
	var a bootstrapv3.Admin
	if err := protojson.Unmarshal([]byte(`{"access_log":`+js+`}`), &a); err != nil {
		t.Fatalf("bad test list: %v", err)
	}
	return a.GetAccessLog()
}

func TestCompileAndLog(t *testing.T) {
	d := destinations{}
	list, err := Compile("access_log", accessLogs(t, `[
		{"name": "envoy.access_loggers.stdout"},
		{"name": "errors", "filter": {"status_code_filter": {"comparison": {"op": "GE", "value": {"default_value": 500, "runtime_key": "k"}}}},
		 "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog",
		   "log_format": {"text_format_source": {"inline_string": "%RESPONSE_CODE% %REQ(:PATH)%\n"}}}},
		{"name": "file", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
		   "path": "/var/log/a.log", "log_format": {"json_format": {"code": "%RESPONSE_CODE%"}}}},
		{"name": "envoy.access_loggers.stderr", "typed_config": {}}
	]`), Context{Registry: builtin.Registry(), ByName: true, Sink: accesslog.SinkContext{Open: d.open}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var buf []byte
	for _, code := range []int{200, 503} {
		e := &accesslog.Entry{StartTime: start, Method: "GET", Path: "/p", Protocol: "HTTP/1.1", ResponseCode: code}
		if buf, err = list.Log(buf, e); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"stdout": `[2026-11-25T10:00:00.000Z] "GET /p HTTP/1.1" 200 - 0 0 0 - "-" "-" "-" "-" "-"` + "\n" +
			`[2026-11-25T10:00:00.000Z] "GET /p HTTP/1.1" 503 - 0 0 0 - "-" "-" "-" "-" "-"` + "\n",
		// The filtered logger's lines and the default-format stderr
		// logger's share the stream.
		"stderr": `[2026-11-25T10:00:00.000Z] "GET /p HTTP/1.1" 200 - 0 0 0 - "-" "-" "-" "-" "-"` + "\n" +
			"503 /p\n" +
			`[2026-11-25T10:00:00.000Z] "GET /p HTTP/1.1" 503 - 0 0 0 - "-" "-" "-" "-" "-"` + "\n",
		"/var/log/a.log": `{"code":200}` + "\n" + `{"code":503}` + "\n",
	}
	for k, w := range want {
		if got := d[k].String(); got != w {
			t.Errorf("%s:\n got %q\nwant %q", k, got, w)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	d := destinations{}
	_, err := Compile("access_log", accessLogs(t, `[
		{"name": "envoy.access_loggers.fluentd"},
		{"name": "f", "filter": {}, "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog", "path": "/x"}},
		{"name": "f", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"}},
		{"name": "f", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog", "path": "/denied"}},
		{"name": "f", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
		   "log_format": {"text_format": "%NOPE%"}}},
		{"name": "s", "typed_config": {"@type": "type.googleapis.com/envoy.config.bootstrap.v3.Admin"}}
	]`), Context{Registry: builtin.Registry(), ByName: true, Sink: accesslog.SinkContext{Open: d.open}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`access_log[0].name: access logger "envoy.access_loggers.fluentd" without typed_config is not supported by Outrigger`,
		"access_log[1].filter.filter_specifier: one filter is required",
		"access_log[2].typed_config.path: must be set",
		"access_log[3].typed_config.path: permission denied",
		"access_log[4].typed_config.log_format.",
		"access_log[5].typed_config: access logger type envoy.config.bootstrap.v3.Admin is not supported by Outrigger",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

func TestNamesNeedTypedConfigUnderTheGuard(t *testing.T) {
	_, err := Compile("access_log", accessLogs(t, `[{"name": "envoy.access_loggers.stdout"}]`),
		Context{Registry: builtin.Registry(), ByName: false, Sink: accesslog.SinkContext{Open: destinations{}.open}})
	want := `access_log[0].typed_config: Didn't find a registered implementation for 'envoy.access_loggers.stdout' with type URL: ''`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

func TestDisabledLogger(t *testing.T) {
	reg := builtin.Registry()
	if _, err := reg.Disable([]string{"envoy.access_loggers/envoy.access_loggers.stdout"}); err != nil {
		t.Fatal(err)
	}
	_, err := Compile("access_log", accessLogs(t, `[{"name": "envoy.access_loggers.stdout"}]`),
		Context{Registry: reg, ByName: true, Sink: accesslog.SinkContext{Open: destinations{}.open}})
	if err == nil || !strings.Contains(err.Error(), "disabled by --disable-extensions") {
		t.Fatalf("error = %v", err)
	}
}

// opaqueSink is a sink that cannot tell what it reads.
type opaqueSink struct{}

func (opaqueSink) Log(buf []byte, _ *accesslog.Entry) ([]byte, error) { return buf, nil }

// TestReadsUpstreamConnection: a list reads the upstream connection when
// one of its loggers' formats may, or when a sink cannot tell.
func TestReadsUpstreamConnection(t *testing.T) {
	ctx := Context{Registry: builtin.Registry(), ByName: true, Sink: accesslog.SinkContext{Open: destinations{}.open}}
	quiet, err := Compile("access_log", accessLogs(t, `[
		{"name": "envoy.access_loggers.stdout"},
		{"name": "envoy.access_loggers.stderr", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog",
		   "log_format": {"text_format_source": {"inline_string": "%UPSTREAM_HOST%\n"}}}}
	]`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.ReadsUpstreamConnection() {
		t.Error("default and UPSTREAM_HOST formats read the upstream connection")
	}
	loud, err := Compile("access_log", accessLogs(t, `[
		{"name": "envoy.access_loggers.stdout"},
		{"name": "file", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
		   "path": "/var/log/a.log", "log_format": {"json_format": {"up": "%UPSTREAM_LOCAL_ADDRESS%"}}}}
	]`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !loud.ReadsUpstreamConnection() {
		t.Error("an UPSTREAM_LOCAL_ADDRESS format does not read the upstream connection")
	}
	quiet.Add(opaqueSink{})
	if !quiet.ReadsUpstreamConnection() {
		t.Error("a sink that cannot tell is taken not to read the upstream connection")
	}
	var empty List
	if empty.ReadsUpstreamConnection() {
		t.Error("an empty list reads the upstream connection")
	}
}
