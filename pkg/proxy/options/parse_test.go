package options

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// testEnv is a machine with 8 hardware threads and a 3-CPU cpuset.
var testEnv = Environment{
	HardwareThreads: 8,
	CPUSetSize:      func() (int, error) { return 3, nil },
}

// cfg prefixes args with the config option that most cases need.
func cfg(args ...string) []string {
	return append([]string{"-c", "bootstrap.yaml"}, args...)
}

// defaultOptions is what `-c bootstrap.yaml` parses to in testEnv.
func defaultOptions() *Options {
	return &Options{
		Action:                ActionRun,
		ConfigPath:            "bootstrap.yaml",
		Mode:                  ModeServe,
		LocalAddressIPVersion: "v4",
		Concurrency:           8,
		LogLevel:              logging.LevelInfo,
		LogFormat:             DefaultLogFormat,
		SocketPath:            DefaultSocketPath,
		FileFlushInterval:     10 * time.Second,
		FileFlushMinSizeKB:    64,
		DrainTime:             600 * time.Second,
		DrainStrategy:         DrainGradual,
		ParentShutdownTime:    900 * time.Second,
		TerminationDrainTime:  5 * time.Second,
		MaxObjNameLen:         60,
		MaxStats:              16384,
	}
}

type parseCase struct {
	name string
	args []string
	env  *Environment // testEnv when nil
	// want edits defaultOptions() into the expected result.
	want func(o *Options)
}

var parseCases = []parseCase{
	{name: "defaults", args: cfg(), want: func(*Options) {}},
	{name: "config path long form", args: []string{"--config-path", "b.json"},
		want: func(o *Options) { o.ConfigPath = "b.json" }},
	{name: "config path with equals", args: []string{"--config-path=b.pb"},
		want: func(o *Options) { o.ConfigPath = "b.pb" }},
	{name: "config path short form glued", args: []string{"-cb.pb_text"},
		want: func(o *Options) { o.ConfigPath = "b.pb_text" }},
	{name: "config yaml only", args: []string{"--config-yaml", "node: {id: n1}"},
		want: func(o *Options) { o.ConfigPath, o.ConfigYAML = "", "node: {id: n1}" }},
	{name: "config path and yaml", args: cfg("--config-yaml", "{}"),
		want: func(o *Options) { o.ConfigYAML = "{}" }},
	{name: "bootstrap version", args: cfg("--bootstrap-version", "3"),
		want: func(o *Options) { o.BootstrapVersion = 3 }},
	{name: "mode serve", args: cfg("--mode", "serve"), want: func(*Options) {}},
	{name: "mode validate", args: cfg("--mode", "validate"),
		want: func(o *Options) { o.Mode = ModeValidate }},
	{name: "mode init_only", args: cfg("--mode=init_only"),
		want: func(o *Options) { o.Mode = ModeInitOnly }},
	{name: "admin address path", args: cfg("--admin-address-path", "/tmp/admin.txt"),
		want: func(o *Options) { o.AdminAddressPath = "/tmp/admin.txt" }},
	{name: "local address v6", args: cfg("--local-address-ip-version", "v6"),
		want: func(o *Options) { o.LocalAddressIPVersion = "v6" }},
	{name: "local address v4", args: cfg("--local-address-ip-version", "v4"), want: func(*Options) {}},
	{name: "base id", args: cfg("--base-id", "7"), want: func(o *Options) { o.BaseID = 7 }},
	{name: "base id maximum", args: cfg("--base-id", "4294967295"),
		want: func(o *Options) { o.BaseID = 4294967295 }},
	{name: "dynamic base id", args: cfg("--use-dynamic-base-id", "--base-id-path", "/tmp/base"),
		want: func(o *Options) { o.UseDynamicBaseID, o.BaseIDPath = true, "/tmp/base" }},
	{name: "concurrency", args: cfg("--concurrency", "4"), want: func(o *Options) { o.Concurrency = 4 }},
	{name: "concurrency zero runs one worker", args: cfg("--concurrency", "0"),
		want: func(o *Options) { o.Concurrency = 1 }},
	{name: "cpuset threads", args: cfg("--cpuset-threads"),
		want: func(o *Options) { o.CPUSetThreads, o.Concurrency = true, 3 }},
	{name: "cpuset threads with concurrency", args: cfg("--cpuset-threads", "--concurrency", "5"),
		want: func(o *Options) {
			o.CPUSetThreads, o.Concurrency = true, 5
			o.Warnings = []string{"Both --concurrency and --cpuset-threads options are set; not applying --cpuset-threads."}
		}},
	{name: "cpuset size unreadable", args: cfg("--cpuset-threads"),
		env: &Environment{HardwareThreads: 6, CPUSetSize: func() (int, error) { return 0, errors.New("no affinity") }},
		want: func(o *Options) {
			o.CPUSetThreads, o.Concurrency = true, 6
			o.Warnings = []string{"cannot read the cpuset size, using 6 hardware threads as the worker count: no affinity"}
		}},
	{name: "cpuset size zero", args: cfg("--cpuset-threads"),
		env: &Environment{HardwareThreads: 6, CPUSetSize: func() (int, error) { return 0, nil }},
		want: func(o *Options) {
			o.CPUSetThreads, o.Concurrency = true, 6
			o.Warnings = []string{"the cpuset size is 0; using 6 hardware threads as the worker count"}
		}},
	{name: "cpuset size unknown", args: cfg("--cpuset-threads"),
		env: &Environment{HardwareThreads: 2},
		want: func(o *Options) {
			o.CPUSetThreads, o.Concurrency = true, 2
			o.Warnings = []string{"the cpuset size is unknown; using 2 hardware threads as the worker count"}
		}},
	{name: "no hardware threads known", args: cfg(), env: &Environment{},
		want: func(o *Options) { o.Concurrency = 1 }},
	{name: "log level short", args: cfg("-l", "debug"), want: func(o *Options) { o.LogLevel = logging.LevelDebug }},
	// One argument "--option value", as Contour's Envoy DaemonSet passes
	// them: Envoy's parser splits it at the first space.
	{name: "option and value in one argument", args: []string{"-c /config/envoy.json", "--service-cluster projectcontour", "--service-node envoy-1", "--log-level info"},
		want: func(o *Options) {
			o.ConfigPath, o.ServiceCluster, o.ServiceNode = "/config/envoy.json", "projectcontour", "envoy-1"
		}},
	{name: "a value with spaces is not split", args: cfg("--service-node", "--service-cluster x"),
		want: func(o *Options) { o.ServiceNode = "--service-cluster x" }},
	{name: "log level short glued", args: cfg("-ltrace"), want: func(o *Options) { o.LogLevel = logging.LevelTrace }},
	{name: "log level short with equals", args: cfg("-l=error"), want: func(o *Options) { o.LogLevel = logging.LevelError }},
	{name: "log level warn alias", args: cfg("--log-level", "warn"),
		want: func(o *Options) { o.LogLevel = logging.LevelWarning }},
	{name: "log level warning", args: cfg("--log-level", "warning"),
		want: func(o *Options) { o.LogLevel = logging.LevelWarning }},
	{name: "log level critical", args: cfg("--log-level", "critical"),
		want: func(o *Options) { o.LogLevel = logging.LevelCritical }},
	{name: "log level off", args: cfg("--log-level", "off"), want: func(o *Options) { o.LogLevel = logging.LevelOff }},
	{name: "component log levels", args: cfg("--component-log-level", "upstream:debug,connection:trace,admin:warn"),
		want: func(o *Options) {
			o.ComponentLogLevelRaw = "upstream:debug,connection:trace,admin:warn"
			o.ComponentLogLevels = []ComponentLevel{
				{Component: "upstream", Level: logging.LevelDebug},
				{Component: "connection", Level: logging.LevelTrace},
				{Component: "admin", Level: logging.LevelWarning},
			}
		}},
	{name: "empty component log level", args: cfg("--component-log-level", ""), want: func(*Options) {}},
	{name: "log format", args: cfg("--log-format", "%v", "--log-format-escaped"),
		want: func(o *Options) { o.LogFormat, o.LogFormatSet, o.LogFormatEscaped = "%v", true, true }},
	{name: "log path", args: cfg("--log-path", "/var/log/proxy.log"),
		want: func(o *Options) { o.LogPath = "/var/log/proxy.log" }},
	{name: "fine grain logging", args: cfg("--enable-fine-grain-logging"),
		want: func(o *Options) { o.EnableFineGrainLogging = true }},
	{name: "restart epoch", args: cfg("--restart-epoch", "2"), want: func(o *Options) { o.RestartEpoch = 2 }},
	{name: "socket file gets the default mode", args: cfg("--socket-path", "/tmp/hr.sock"),
		want: func(o *Options) { o.SocketPath, o.SocketMode = "/tmp/hr.sock", 0o600 }},
	{name: "socket file with a mode", args: cfg("--socket-path", "/tmp/hr.sock", "--socket-mode", "644"),
		want: func(o *Options) { o.SocketPath, o.SocketMode = "/tmp/hr.sock", 0o644 }},
	{name: "socket mode with leading zero", args: cfg("--socket-path", "/tmp/hr.sock", "--socket-mode", "0755"),
		want: func(o *Options) { o.SocketPath, o.SocketMode = "/tmp/hr.sock", 0o755 }},
	{name: "abstract socket path", args: cfg("--socket-path", "@other"),
		want: func(o *Options) { o.SocketPath = "@other" }},
	{name: "service identity", args: cfg("--service-cluster", "web", "--service-node", "web-1", "--service-zone", "z1"),
		want: func(o *Options) { o.ServiceCluster, o.ServiceNode, o.ServiceZone = "web", "web-1", "z1" }},
	{name: "file flush", args: cfg("--file-flush-interval-msec", "250", "--file-flush-min-size-kb", "128"),
		want: func(o *Options) { o.FileFlushInterval, o.FileFlushMinSizeKB = 250*time.Millisecond, 128 }},
	{name: "file flush interval zero", args: cfg("--file-flush-interval-msec", "0"),
		want: func(o *Options) { o.FileFlushInterval = 0 }},
	{name: "drain", args: cfg("--drain-time-s", "30", "--drain-strategy", "immediate", "--parent-shutdown-time-s", "60"),
		want: func(o *Options) {
			o.DrainTime, o.DrainStrategy, o.ParentShutdownTime = 30*time.Second, DrainImmediate, 60*time.Second
		}},
	{name: "drain strategy gradual", args: cfg("--drain-strategy", "gradual"), want: func(*Options) {}},
	{name: "prometheus naming envoy", args: cfg("--prometheus-naming", "envoy"),
		want: func(o *Options) { o.PrometheusNaming = stats.NamingEnvoy }},
	{name: "prometheus naming proxy", args: cfg("--prometheus-naming", "proxy"), want: func(*Options) {}},
	{name: "drain longer than parent shutdown", args: cfg("--drain-time-s", "900"),
		want: func(o *Options) {
			o.DrainTime = 900 * time.Second
			o.Warnings = []string{"--drain-time-s (900) should be less than --parent-shutdown-time-s (900)."}
		}},
	{name: "drain time without hot restart", args: cfg("--drain-time-s", "1000", "--disable-hot-restart"),
		want: func(o *Options) { o.DrainTime, o.DisableHotRestart = 1000*time.Second, true }},
	{name: "termination drain", args: cfg("--termination-drain-time-s", "20", "--exit-on-zero-active-connections"),
		want: func(o *Options) { o.TerminationDrainTime, o.ExitOnZeroActiveConnections = 20*time.Second, true }},
	{name: "termination drain off", args: cfg("--termination-drain-time-s=0"),
		want: func(o *Options) { o.TerminationDrainTime = 0 }},
	{name: "older build sizes", args: cfg("--max-obj-name-len", "120", "--max-stats", "100000000"),
		want: func(o *Options) { o.MaxObjNameLen, o.MaxStats = 120, 100000000 }},
	{name: "hot restart and tracing switches", args: cfg("--disable-hot-restart", "--enable-mutex-tracing", "--enable-core-dump"),
		want: func(o *Options) { o.DisableHotRestart, o.EnableMutexTracing, o.EnableCoreDump = true, true, true }},
	{name: "switch set to false", args: cfg("--disable-hot-restart=false"), want: func(*Options) {}},
	{name: "unknown field policy", args: cfg("--allow-unknown-static-fields", "--reject-unknown-dynamic-fields"),
		want: func(o *Options) { o.AllowUnknownStaticFields, o.RejectUnknownDynamicFields = true, true }},
	{name: "ignore unknown dynamic fields", args: cfg("--ignore-unknown-dynamic-fields"),
		want: func(o *Options) { o.IgnoreUnknownDynamicFields = true }},
	{name: "ignore and reject unknown dynamic fields",
		args: cfg("--ignore-unknown-dynamic-fields", "--reject-unknown-dynamic-fields"),
		want: func(o *Options) {
			o.IgnoreUnknownDynamicFields, o.RejectUnknownDynamicFields = true, true
			o.Warnings = []string{"--ignore-unknown-dynamic-fields has no effect together with --reject-unknown-dynamic-fields."}
		}},
	{name: "deprecated allow unknown fields", args: cfg("--allow-unknown-fields"),
		want: func(o *Options) {
			o.AllowUnknownStaticFields = true
			o.Warnings = []string{"--allow-unknown-fields is deprecated, use --allow-unknown-static-fields instead."}
		}},
	{name: "disable extensions", args: cfg("--disable-extensions", "proxy.filters.http.router, ,envoy.tracers/zipkin,,"),
		want: func(o *Options) {
			o.DisabledExtensions = []string{"proxy.filters.http.router", "envoy.tracers/zipkin"}
		}},
	{name: "stats tags", args: cfg("--stats-tag", "region:eu-west", "--stats-tag=pod:web-1:8080"),
		want: func(o *Options) {
			o.StatsTags = []StatsTag{{Name: "region", Value: "eu-west"}, {Name: "pod", Value: "web-1:8080"}}
		}},
	{name: "v2 config only", args: cfg("--v2-config-only"),
		want: func(o *Options) {
			o.V2ConfigOnly = true
			o.Warnings = []string{"--v2-config-only is deprecated and has no effect."}
		}},
	{name: "newer switches", args: cfg("--skip-hot-restart-on-no-parent", "--skip-hot-restart-parent-stats",
		"--skip-deprecated-logs", "--log-stacktrace-single-entry"),
		want: func(o *Options) {
			o.SkipHotRestartOnNoParent, o.SkipHotRestartParentStats = true, true
			o.SkipDeprecatedLogs, o.LogStacktraceSingleEntry = true, true
		}},
	{name: "arguments after double dash are ignored", args: cfg("--", "--mode", "bogus"),
		want: func(o *Options) { o.Warnings = []string{"ignoring 2 argument(s) after --"} }},
	{name: "hot restart version needs no config", args: []string{"--hot-restart-version", "--max-stats", "20000"},
		want: func(o *Options) { o.Action, o.ConfigPath, o.MaxStats = ActionHotRestartVersion, "", 20000 }},
	{name: "help", args: []string{"--help"}, want: func(o *Options) { *o = Options{Action: ActionHelp} }},
	{name: "help short", args: []string{"-h"}, want: func(o *Options) { *o = Options{Action: ActionHelp} }},
	{name: "help skips validation", args: []string{"--mode", "bogus", "-h"},
		want: func(o *Options) { *o = Options{Action: ActionHelp} }},
	{name: "version", args: []string{"--version"}, want: func(o *Options) { *o = Options{Action: ActionVersion} }},
	{name: "help wins over version", args: []string{"--version", "--help"},
		want: func(o *Options) { *o = Options{Action: ActionHelp} }},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv
			if tc.env != nil {
				env = *tc.env
			}
			args := slices.Clone(tc.args)
			got, err := Parse(args, env)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.args, err)
			}
			want := defaultOptions()
			tc.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.args, diff)
			}
			if !slices.Equal(args, tc.args) {
				t.Errorf("Parse changed its arguments: %q", args)
			}
		})
	}
}

type parseErrorCase struct {
	name    string
	args    []string
	wantErr string
}

var parseErrorCases = []parseErrorCase{
	{"no config", nil, "at least one of --config-path or --config-yaml must be given"},
	{"no config in validate mode", []string{"--mode", "validate"}, "at least one of --config-path or --config-yaml must be given"},
	{"empty config", []string{"-c", "", "--config-yaml="}, "at least one of --config-path or --config-yaml must be given"},
	{"unknown option", cfg("--bogus"), "unknown option '--bogus'"},
	{"unknown option with value", cfg("--bogus=1"), "unknown option '--bogus'"},
	{"unknown shorthand", cfg("-x"), "unknown option '-x'"},
	{"single dash long name", cfg("-mode", "serve"), "unknown option '-m' in '-mode'"},
	{"go test shorthand", cfg("-test.v"), "unknown option '-test.v'"},
	{"go test shorthand after a switch", cfg("-htest.v"), "unknown option '-htest.v'"},
	{"underscore spelling", []string{"--config_path", "b.yaml"}, "unknown option '--config_path'"},
	{"unknown option is quoted safely", cfg("--a\nb"), `unknown option '--a\nb'`},
	{"missing value", cfg("--mode"), "option --mode needs a value"},
	{"missing short value", []string{"-c"}, "option -c needs a value"},
	{"repeated option", cfg("--mode", "serve", "--mode", "validate"), "option --mode given more than once"},
	{"repeated short and long option", []string{"-c", "a.yaml", "--config-path", "b.yaml"}, "option --config-path given more than once"},
	{"repeated switch", cfg("--disable-hot-restart", "--disable-hot-restart"), "option --disable-hot-restart given more than once"},
	{"positional argument", cfg("serve"), "unexpected argument 'serve'"},
	{"switch given a separate value", cfg("--disable-hot-restart", "false"), "unexpected argument 'false'"},
	{"bad syntax", cfg("---mode"), "bad option syntax '---mode'"},
	{"bad syntax equals", cfg("--=x"), "bad option syntax '--=x'"},
	{"not a number", cfg("--concurrency", "abc"), "invalid value 'abc' for --concurrency: not an unsigned integer"},
	{"empty number", cfg("--concurrency="), "invalid value '' for --concurrency: not an unsigned integer"},
	{"hex number", cfg("--base-id", "0x10"), "invalid value '0x10' for --base-id: not an unsigned integer"},
	{"number with sign", cfg("--base-id", "+1"), "invalid value '+1' for --base-id: not an unsigned integer"},
	{"number with space", cfg("--restart-epoch", " 1"), "invalid value ' 1' for --restart-epoch: not an unsigned integer"},
	{"negative number", cfg("--base-id", "-1"), "invalid value '-1' for --base-id: must not be negative"},
	{"negative duration", cfg("--drain-time-s=-5"), "invalid value '-5' for --drain-time-s: must not be negative"},
	{"negative termination drain", cfg("--termination-drain-time-s", "-1"), "invalid value '-1' for --termination-drain-time-s: must not be negative"},
	{"fractional termination drain", cfg("--termination-drain-time-s", "2.5"), "invalid value '2.5' for --termination-drain-time-s: not an unsigned integer"},
	{"termination drain with unit", cfg("--termination-drain-time-s", "5s"), "invalid value '5s' for --termination-drain-time-s: not an unsigned integer"},
	{"exit on zero with a value", cfg("--exit-on-zero-active-connections=maybe"), "invalid value 'maybe' for --exit-on-zero-active-connections: not a boolean (true or false)"},
	{"negative flush interval", cfg("--file-flush-interval-msec", "-1"), "invalid value '-1' for --file-flush-interval-msec: must not be negative"},
	{"negative parent shutdown", cfg("--parent-shutdown-time-s", "-1"), "invalid value '-1' for --parent-shutdown-time-s: must not be negative"},
	{"uint32 overflow", cfg("--restart-epoch", "4294967296"), "invalid value '4294967296' for --restart-epoch: out of range, the maximum is 4294967295"},
	{"concurrency overflow", cfg("--concurrency", "99999999999999999999"), "invalid value '99999999999999999999' for --concurrency: out of range, the maximum is 4294967295"},
	{"flush size overflow", cfg("--file-flush-min-size-kb", "4294967296"), "invalid value '4294967296' for --file-flush-min-size-kb: out of range, the maximum is 4294967295"},
	{"uint64 overflow", cfg("--max-stats", "18446744073709551616"), "invalid value '18446744073709551616' for --max-stats: out of range, the maximum is 18446744073709551615"},
	{"bootstrap version overflow", cfg("--bootstrap-version", "2147483648"), "invalid value '2147483648' for --bootstrap-version: out of range, the maximum is 2147483647"},
	{"bad switch value", cfg("--disable-hot-restart=maybe"), "invalid value 'maybe' for --disable-hot-restart: not a boolean (true or false)"},
	{"unknown mode", cfg("--mode", "serving"), "unknown mode 'serving'"},
	{"empty mode", cfg("--mode", ""), "unknown mode ''"},
	{"mode is case sensitive", cfg("--mode", "Validate"), "unknown mode 'Validate'"},
	{"control characters are escaped", cfg("--mode", "a\nb\x00\xff"), `unknown mode 'a\nb\x00\xff'`},
	{"long values are cut", cfg("--mode", strings.Repeat("x", 300)), "unknown mode '" + strings.Repeat("x", 200) + "...'"},
	{"unknown ip version", cfg("--local-address-ip-version", "v5"), "unknown IP address version 'v5'"},
	{"bad log level", cfg("-l", "verbose"), "invalid log level specified 'verbose'"},
	{"log level is case sensitive", cfg("--log-level", "INFO"), "invalid log level specified 'INFO'"},
	{"component level without colon", cfg("--component-log-level", "upstream"), "component log level not correctly specified 'upstream'"},
	{"component level with two colons", cfg("--component-log-level", "upstream:debug:x"), "component log level not correctly specified 'upstream:debug:x'"},
	{"component level trailing comma", cfg("--component-log-level", "upstream:debug,"), "component log level not correctly specified ''"},
	{"component level bad level", cfg("--component-log-level", "upstream:loud"), "invalid log level specified 'loud'"},
	{"component level bad component", cfg("--component-log-level", "admin:info,nope:debug"), "invalid component specified 'nope'"},
	{"component level with fine grain logging", cfg("--component-log-level", "upstream:debug", "--enable-fine-grain-logging"),
		"--component-log-level will not work with --enable-fine-grain-logging"},
	{"unknown drain strategy", cfg("--mode", "validate", "--drain-strategy", "slow"), "unknown drain-strategy 'slow'"},
	{"unknown prometheus naming", cfg("--prometheus-naming", "Envoy"), `--prometheus-naming: unknown naming "Envoy": want proxy or envoy`},
	{"socket mode not octal", cfg("--socket-path", "/tmp/s", "--socket-mode", "rw"), "invalid socket-mode 'rw'"},
	{"socket mode with digit 9", cfg("--socket-path", "/tmp/s", "--socket-mode", "699"), "invalid socket-mode '699'"},
	{"socket mode too large", cfg("--socket-path", "/tmp/s", "--socket-mode", "1000"), "invalid socket-mode '1000'"},
	{"socket mode empty", cfg("--socket-path", "/tmp/s", "--socket-mode", ""), "invalid socket-mode ''"},
	{"socket mode with unset path", cfg("--socket-mode", "600"), "--socket-mode is not allowed with an abstract (@) or unset --socket-path"},
	{"socket mode with abstract path", cfg("--socket-path", "@s", "--socket-mode", "600"), "--socket-mode is not allowed with an abstract (@) or unset --socket-path"},
	{"empty socket path", cfg("--socket-path", ""), "--socket-path must not be empty"},
	{"restart epoch with dynamic base id", cfg("--use-dynamic-base-id", "--restart-epoch", "3"), "cannot use --restart-epoch=3 with --use-dynamic-base-id"},
	{"name length too small", cfg("--max-obj-name-len", "59"), "--max-obj-name-len must be at least 60"},
	{"too many stats", cfg("--max-stats", "100000001"), "--max-stats must not exceed 100000000"},
	{"stats tag without colon", cfg("--stats-tag", "region"), "misformatted stats-tag 'region'"},
	{"stats tag without name", cfg("--stats-tag", ":eu"), "misformatted stats-tag ':eu'"},
	{"stats tag without value", cfg("--stats-tag", "region:"), "misformatted stats-tag 'region:'"},
	{"stats tag name not alphanumeric", cfg("--stats-tag", "the_region:eu"), "misformatted stats-tag 'the_region:eu' contains invalid char in 'the_region'"},
	{"stats tag value with a dot", cfg("--stats-tag", "host:a.b"), "misformatted stats-tag 'host:a.b' contains invalid char in 'a.b'"},
	{"stats tag name twice", cfg("--stats-tag", "a:1", "--stats-tag", "a:2"), "duplicate stats-tag name 'a'"},
	{"hot restart version still validates", []string{"--hot-restart-version", "--max-obj-name-len", "1"}, "--max-obj-name-len must be at least 60"},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range parseErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.args, testEnv)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", tc.args, got, tc.wantErr)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned options %+v with its error", tc.args, got)
			}
			if err.Error() != tc.wantErr {
				t.Errorf("Parse(%q) error:\n got %q\nwant %q", tc.args, err.Error(), tc.wantErr)
			}
		})
	}
}

// TestParseValueErrorsWrapCause checks that the reason for a malformed value
// stays reachable with errors.Unwrap.
func TestParseValueErrorsWrapCause(t *testing.T) {
	_, err := Parse(cfg("--concurrency", "abc"), testEnv)
	if err == nil {
		t.Fatal("Parse accepted a non-numeric --concurrency")
	}
	if cause := errors.Unwrap(err); cause == nil || cause.Error() != "not an unsigned integer" {
		t.Errorf("errors.Unwrap(%q) = %v, want the value's own error", err, cause)
	}
}

// TestEveryOptionIsTested makes sure the success table above exercises every
// option of the table, so a new option cannot slip in untested.
func TestEveryOptionIsTested(t *testing.T) {
	used := make(map[string]bool)
	for _, tc := range parseCases {
		for _, a := range tc.args {
			if a == "--" {
				break
			}
			if name, ok := strings.CutPrefix(a, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				used[name] = true
			}
		}
	}
	for i := range optionTable {
		o := &optionTable[i]
		if !used[o.long] {
			t.Errorf("no parse case uses --%s", o.long)
		}
	}
	for _, short := range []string{"-c", "-l", "-h"} {
		found := false
		for _, tc := range parseCases {
			found = found || slices.ContainsFunc(tc.args, func(a string) bool { return strings.HasPrefix(a, short) })
		}
		if !found {
			t.Errorf("no parse case uses %s", short)
		}
	}
}
