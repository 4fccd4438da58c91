package kubectl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTapRequest checks the /tap bodies the plugin sends: a tap of every
// request by default, a file's request as written (its numbers exact),
// and a tap_config alone wrapped with --config-id (json.Marshal sorts
// the keys, so the bodies compare as text).
func TestTapRequest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	whole := write("whole.yaml", "config_id: web\ntap_config:\n  match: {any_match: true}\n  output_config:\n    max_buffered_rx_bytes: 18446744073709551615\n    sinks: [{streaming_admin: {}}]\n")
	alone := write("alone.json", `{"match":{"http_request_headers_match":{"headers":[{"name":"x","present_match":true}]}},"output_config":{"sinks":[{"streaming_admin":{}}]}}`)
	cases := map[string]struct {
		id, file, want string
	}{
		"default":          {"web", "", `{"config_id":"web","tap_config":{"match":{"any_match":true},"output_config":{"sinks":[{"streaming_admin":{}}]}}}`},
		"whole request":    {"", whole, `{"config_id":"web","tap_config":{"match":{"any_match":true},"output_config":{"max_buffered_rx_bytes":18446744073709551615,"sinks":[{"streaming_admin":{}}]}}}`},
		"same id":          {"web", whole, `{"config_id":"web","tap_config":{"match":{"any_match":true},"output_config":{"max_buffered_rx_bytes":18446744073709551615,"sinks":[{"streaming_admin":{}}]}}}`},
		"tap_config alone": {"api", alone, `{"config_id":"api","tap_config":{"match":{"http_request_headers_match":{"headers":[{"name":"x","present_match":true}]}},"output_config":{"sinks":[{"streaming_admin":{}}]}}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tapRequest(tc.id, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("body = %s\nwant %s", got, tc.want)
			}
		})
	}
}
