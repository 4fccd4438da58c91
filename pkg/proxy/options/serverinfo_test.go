package options

import (
	"bytes"
	"encoding/json"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// renderJSON prints m the way /server_info does: proto field names, every
// field, one-space indent, trailing newline. protojson's whitespace is
// deliberately unstable, so it is normalised with encoding/json.
func renderJSON(t *testing.T, m proto.Message) []byte {
	t.Helper()
	raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %T: %v", m, err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", " "); err != nil {
		t.Fatalf("indent: %v", err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// fullArgs sets every option to something other than its default.
var fullArgs = []string{
	"-c", "/etc/proxy/bootstrap.yaml", "--config-yaml", "node: {id: n1}", "--bootstrap-version", "3",
	"--mode", "validate", "--admin-address-path", "/tmp/admin", "--local-address-ip-version", "v6",
	"--base-id", "4", "--use-dynamic-base-id", "--base-id-path", "/tmp/base-id", "--concurrency", "2",
	"--cpuset-threads", "-l", "debug", "--component-log-level", "upstream:trace,admin:warn",
	"--log-format", "%l %v", "--log-format-escaped", "--log-path", "/var/log/proxy.log",
	"--socket-path", "/tmp/hot-restart.sock", "--socket-mode", "640",
	"--service-cluster", "web", "--service-node", "web-1", "--service-zone", "zone-a",
	"--file-flush-interval-msec", "1500", "--file-flush-min-size-kb", "16", "--drain-time-s", "30",
	"--drain-strategy", "immediate", "--parent-shutdown-time-s", "45", "--max-obj-name-len", "100",
	"--max-stats", "5000", "--disable-hot-restart", "--enable-mutex-tracing", "--allow-unknown-fields",
	"--reject-unknown-dynamic-fields", "--ignore-unknown-dynamic-fields",
	"--disable-extensions", "proxy.tracers.zipkin,proxy.filters.http.router", "--stats-tag", "region:eu",
	"--stats-tag", "pod:web-1", "--enable-core-dump", "--v2-config-only", "--skip-hot-restart-on-no-parent",
	"--skip-hot-restart-parent-stats", "--skip-deprecated-logs", "--log-stacktrace-single-entry",
}

// fullArgsOtherHalf swaps the options that fullArgs cannot combine
// (--use-dynamic-base-id with --restart-epoch, --component-log-level with
// --enable-fine-grain-logging) for their counterparts, so that between the
// two every field is shown with a non-default value.
func fullArgsOtherHalf() []string {
	var args []string
	for i := 0; i < len(fullArgs); i++ {
		switch fullArgs[i] {
		case "--use-dynamic-base-id":
			args = append(args, "--restart-epoch", "2")
		case "--component-log-level":
			args = append(args, "--enable-fine-grain-logging")
			i++ // drop its value
		default:
			args = append(args, fullArgs[i])
		}
	}
	return args
}

func TestCommandLineOptionsGolden(t *testing.T) {
	tests := map[string]struct {
		args   []string
		golden string
	}{
		"defaults":                {args: []string{"--config-yaml", "{}"}, golden: "command_line_options_defaults.golden.json"},
		"every field":             {args: fullArgs, golden: "command_line_options_full.golden.json"},
		"every field, other half": {args: fullArgsOtherHalf(), golden: "command_line_options_full_other_half.golden.json"},
		"init only":               {args: []string{"-c", "b.yaml", "--mode", "init_only"}, golden: "command_line_options_init_only.golden.json"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(tc.args, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, renderJSON(t, o.CommandLineOptions()))
		})
	}
}

// TestCommandLineOptionsCopiesSlices checks that the message does not share
// memory with the options, so a caller editing one cannot change the other.
func TestCommandLineOptionsCopiesSlices(t *testing.T) {
	o, err := Parse(fullArgs, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	m := o.CommandLineOptions()
	m.DisabledExtensions[0] = "changed"
	if o.DisabledExtensions[0] == "changed" {
		t.Error("CommandLineOptions shares DisabledExtensions with the options")
	}
}

func TestHotRestartVersion(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"defaults":    {args: nil, want: "1.60.16384"},
		"older sizes": {args: []string{"--max-obj-name-len", "100", "--max-stats", "5000"}, want: "1.100.5000"},
		"disabled":    {args: []string{"--disable-hot-restart", "--max-stats", "5000"}, want: "disabled"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(append([]string{"--hot-restart-version"}, tc.args...), testEnv)
			if err != nil {
				t.Fatal(err)
			}
			if o.Action != ActionHotRestartVersion {
				t.Errorf("Action = %v, want %v", o.Action, ActionHotRestartVersion)
			}
			if got := o.HotRestartVersion(); got != tc.want {
				t.Errorf("HotRestartVersion() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEnumStrings(t *testing.T) {
	tests := map[string]struct {
		got, want string
	}{
		"serve":            {ModeServe.String(), "serve"},
		"validate":         {ModeValidate.String(), "validate"},
		"init only":        {ModeInitOnly.String(), "init_only"},
		"unknown mode":     {Mode(9).String(), "mode(9)"},
		"gradual":          {DrainGradual.String(), "gradual"},
		"immediate":        {DrainImmediate.String(), "immediate"},
		"unknown strategy": {DrainStrategy(-1).String(), "drain_strategy(-1)"},
		"run":              {ActionRun.String(), "run"},
		"help":             {ActionHelp.String(), "help"},
		"version":          {ActionVersion.String(), "version"},
		"hot restart":      {ActionHotRestartVersion.String(), "hot_restart_version"},
		"unknown action":   {Action(7).String(), "action(7)"},
		"stats tag":        {StatsTag{Name: "a", Value: "b:c"}.String(), "a:b:c"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// TestCommandLineOptionsInvalidUTF8 checks that arguments that are not
// UTF-8 (legal in paths) still render, with U+FFFD in place of bad bytes.
func TestCommandLineOptionsInvalidUTF8(t *testing.T) {
	tests := map[string]struct {
		args []string
		get  func(m *adminv3.CommandLineOptions) string
		want string
	}{
		"config path":   {args: []string{"-c", "b\xb8.yaml"}, get: (*adminv3.CommandLineOptions).GetConfigPath, want: "b\uFFFD.yaml"},
		"config yaml":   {args: []string{"--config-yaml", "\xff"}, get: (*adminv3.CommandLineOptions).GetConfigYaml, want: "\uFFFD"},
		"log path":      {args: []string{"-c", "b", "--log-path", "/l\xfe"}, get: (*adminv3.CommandLineOptions).GetLogPath, want: "/l\uFFFD"},
		"service node":  {args: []string{"-c", "b", "--service-node", "n\xc3"}, get: (*adminv3.CommandLineOptions).GetServiceNode, want: "n\uFFFD"},
		"socket path":   {args: []string{"-c", "b", "--socket-path", "/s\x80"}, get: (*adminv3.CommandLineOptions).GetSocketPath, want: "/s\uFFFD"},
		"stats tag":     {args: []string{"-c", "b", "--stats-tag", "a:\x80"}, get: func(m *adminv3.CommandLineOptions) string { return m.GetStatsTag()[0] }, want: "a:\uFFFD"},
		"extension":     {args: []string{"-c", "b", "--disable-extensions", "x/\x80"}, get: func(m *adminv3.CommandLineOptions) string { return m.GetDisabledExtensions()[0] }, want: "x/\uFFFD"},
		"valid unicode": {args: []string{"-c", "zoné.yaml"}, get: (*adminv3.CommandLineOptions).GetConfigPath, want: "zoné.yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := Parse(tc.args, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			m := o.CommandLineOptions()
			if got := tc.get(m); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if _, err := protojson.Marshal(m); err != nil {
				t.Errorf("marshal: %v", err)
			}
		})
	}
}
