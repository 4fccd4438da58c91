package adminclient

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// TestParseGolden parses a real answer of each kind and compares what was
// understood with a golden file.
func TestParseGolden(t *testing.T) {
	cases := map[string]struct {
		input string
		parse func([]byte) (string, error)
	}{
		"server_info": {
			input: "server_info.json",
			parse: func(b []byte) (string, error) {
				info, err := ParseServerInfo(b)
				return fmt.Sprintf("state=%s uptime=%s\n", info.State, info.Uptime), err
			},
		},
		"runtime": {
			input: "runtime.json",
			parse: func(b []byte) (string, error) {
				rt, err := ParseRuntime(b)
				var out strings.Builder
				fmt.Fprintf(&out, "layers=%q\n", rt.Layers)
				for _, k := range sortedKeys(rt.Entries) {
					fmt.Fprintf(&out, "%s: layers=%q final=%q\n", k, rt.Entries[k].LayerValues, rt.Entries[k].FinalValue)
				}
				return out.String(), err
			},
		},
		"logging": {
			input: "logging.txt",
			parse: func(b []byte) (string, error) {
				levels, err := ParseLoggers(b)
				var out strings.Builder
				for _, k := range sortedKeys(levels) {
					fmt.Fprintf(&out, "%s=%s\n", k, levels[k])
				}
				return out.String(), err
			},
		},
		"stats": {
			input: "stats.json",
			parse: func(b []byte) (string, error) {
				n, err := ParseActiveConnections(b)
				return fmt.Sprintf("active=%d\n", n), err
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", tc.input))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.parse(in)
			if err != nil {
				t.Fatalf("parse %s: %v", tc.input, err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), []byte(got))
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestParseErrors feeds each parser answers it must refuse.
func TestParseErrors(t *testing.T) {
	cases := map[string]struct {
		parse   func([]byte) error
		input   string
		wantErr string
	}{
		"server info not JSON": {
			parse: serverInfoErr, input: "<html>", wantErr: "parse server info",
		},
		"server info without uptime": {
			parse: serverInfoErr, input: `{"state":"LIVE"}`, wantErr: "no state or uptime_current_epoch",
		},
		"server info uptime not seconds": {
			parse: serverInfoErr, input: `{"state":"LIVE","uptime_current_epoch":"5m"}`, wantErr: "not a duration in seconds",
		},
		"server info negative uptime": {
			parse: serverInfoErr, input: `{"state":"LIVE","uptime_current_epoch":"-5s"}`, wantErr: "not a duration in seconds",
		},
		"runtime without layers": {
			parse: runtimeErr, input: `{"entries":{}}`, wantErr: "no layers",
		},
		"runtime with a short entry": {
			parse: runtimeErr, input: `{"layers":["a","b"],"entries":{"k":{"layer_values":["1"],"final_value":"1"}}}`, wantErr: `key "k" has 1 layer values for 2 layers`,
		},
		"loggers missing": {
			parse: loggersErr, input: "error: unknown logger name\n", wantErr: "no \"active loggers:\" list",
		},
		"logger line malformed": {
			parse: loggersErr, input: "active loggers:\n  admin\n", wantErr: `line "  admin"`,
		},
		"stats without list": {
			parse: statsErr, input: `{}`, wantErr: "no stats list",
		},
		"stats value not an integer": {
			parse: statsErr, input: `{"stats":[{"name":"listener.x.downstream_cx_active","value":1.5}]}`, wantErr: "not a gauge",
		},
		"stats value negative": {
			parse: statsErr, input: `{"stats":[{"name":"listener.x.downstream_cx_active","value":-1}]}`, wantErr: "not a gauge",
		},
		"stats sum overflows": {
			parse:   statsErr,
			input:   `{"stats":[{"name":"listener.x.downstream_cx_active","value":9223372036854775807},{"name":"listener.y.downstream_cx_active","value":1}]}`,
			wantErr: "overflows",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.parse([]byte(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func serverInfoErr(b []byte) error { _, err := ParseServerInfo(b); return err }
func runtimeErr(b []byte) error    { _, err := ParseRuntime(b); return err }
func loggersErr(b []byte) error    { _, err := ParseLoggers(b); return err }
func statsErr(b []byte) error      { _, err := ParseActiveConnections(b); return err }

// seeds are the fuzz targets' starting points: the golden inputs.
func seeds(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseServerInfo(f *testing.F) {
	seeds(f, "server_info.json")
	f.Add([]byte(`{"state":"LIVE","uptime_current_epoch":"0.5s"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseServerInfo(b)
		if err == nil && info.Uptime < 0 {
			t.Fatalf("negative uptime %s accepted", info.Uptime)
		}
	})
}

func FuzzParseRuntime(f *testing.F) {
	seeds(f, "runtime.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		rt, err := ParseRuntime(b)
		if err != nil {
			return
		}
		for k, e := range rt.Entries {
			if len(e.LayerValues) != len(rt.Layers) {
				t.Fatalf("key %q: %d values for %d layers accepted", k, len(e.LayerValues), len(rt.Layers))
			}
		}
	})
}

func FuzzParseLoggers(f *testing.F) {
	seeds(f, "logging.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		levels, err := ParseLoggers(b)
		if err != nil {
			return
		}
		for name, level := range levels {
			if name == "" || level == "" {
				t.Fatalf("empty logger name or level accepted: %q=%q", name, level)
			}
		}
	})
}

func FuzzParseActiveConnections(f *testing.F) {
	seeds(f, "stats.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseActiveConnections(b)
		if err == nil && n < 0 {
			t.Fatalf("negative connection count %d", n)
		}
	})
}
