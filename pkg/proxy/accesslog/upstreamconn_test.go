package accesslog

import "testing"

// extParser is a formatter extension whose one command, %EXT%, reads what
// it likes of the entry.
type extParser struct{}

func (extParser) Parse(command, _ string, _ bool, _ int) (Provider, error) {
	if command != "EXT" {
		return nil, nil
	}
	return extProvider{}, nil
}

type extProvider struct{}

func (extProvider) Value(e *Entry) (string, bool) { return e.UpstreamLocalAddress, true }

// TestReadsUpstreamConnection: the formats that may show the upstream
// connection are found in text and JSON formats, nested ones included; a
// formatter extension's command counts, since what it reads is not known.
func TestReadsUpstreamConnection(t *testing.T) {
	for _, tc := range []struct {
		format string
		want   bool
	}{
		{"%UPSTREAM_HOST% %UPSTREAM_CLUSTER% %DOWNSTREAM_LOCAL_ADDRESS%", false},
		{"%DOWNSTREAM_TLS_VERSION% %DOWNSTREAM_PEER_SUBJECT%", false},
		{"plain text", false},
		{"a=%UPSTREAM_LOCAL_ADDRESS%", true},
		{"%UPSTREAM_TLS_VERSION%", true},
		{"%UPSTREAM_PEER_SUBJECT%", true},
		{"%UPSTREAM_PEER_CERT_V_END(%Y)%", true},
		{"%EXT%", true},
	} {
		f, err := text(tc.format, false, []CommandParser{extParser{}})
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if got := f.ReadsUpstreamConnection(); got != tc.want {
			t.Errorf("text %q: %v, want %v", tc.format, got, tc.want)
		}
		if got := (LineSink{Format: f}).ReadsUpstreamConnection(); got != tc.want {
			t.Errorf("line sink of %q: %v, want %v", tc.format, got, tc.want)
		}
	}
	if Default().ReadsUpstreamConnection() {
		t.Error("the default format reads the upstream connection")
	}
	var nilFormat *Formatter
	if nilFormat.ReadsUpstreamConnection() {
		t.Error("a nil formatter reads the upstream connection")
	}
	for _, tc := range []struct {
		dict string
		want bool
	}{
		{`{"code": "%RESPONSE_CODE%", "host": "%UPSTREAM_HOST%"}`, false},
		{`{"up": {"local": "%UPSTREAM_LOCAL_ADDRESS%"}}`, true},
		{`{"list": ["a", "%UPSTREAM_TLS_CIPHER%"]}`, true},
		{`{"list": ["a", {"b": "%DOWNSTREAM_TLS_CIPHER%"}]}`, false},
	} {
		if got := mustJSON(t, tc.dict, true, false).ReadsUpstreamConnection(); got != tc.want {
			t.Errorf("json %s: %v, want %v", tc.dict, got, tc.want)
		}
	}
}
