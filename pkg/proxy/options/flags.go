package options

import (
	"io"
	"math"
	"strconv"

	"github.com/spf13/pflag"
)

// rawOptions holds the option values as pflag decoded them: defaults filled
// in, nothing validated, nothing derived from other options yet.
type rawOptions struct {
	help, version, hotRestartVersion bool

	configPath, configYAML string
	bootstrapVersion       uint64
	v2ConfigOnly           bool
	mode                   string
	adminAddressPath       string
	localAddressIPVersion  string

	baseID           uint64
	useDynamicBaseID bool
	baseIDPath       string
	concurrency      uint64
	cpusetThreads    bool

	logLevel, componentLogLevel string
	logFormat                   string
	logFormatEscaped            bool
	logPath                     string
	enableFineGrainLogging      bool

	restartEpoch           uint64
	socketPath, socketMode string

	serviceCluster, serviceNode, serviceZone string

	fileFlushIntervalMsec, fileFlushMinSizeKB uint64
	drainTimeS, parentShutdownTimeS           uint64
	drainStrategy                             string
	terminationDrainTimeS                     uint64
	exitOnZeroActiveConnections               bool
	maxObjNameLen, maxStats                   uint64

	disableHotRestart, enableMutexTracing bool
	allowUnknownFields                    bool
	allowUnknownStaticFields              bool
	rejectUnknownDynamicFields            bool
	ignoreUnknownDynamicFields            bool
	disableExtensions                     string
	statsTags                             []string
	prometheusNaming                      string
	enableCoreDump                        bool

	skipHotRestartOnNoParent, skipHotRestartParentStats bool
	skipDeprecatedLogs, logStacktraceSingleEntry        bool
}

// defaultRawOptions returns the values an empty command line yields.
func defaultRawOptions() rawOptions {
	return rawOptions{
		mode:                  "serve",
		localAddressIPVersion: "v4",
		logLevel:              "info",
		logFormat:             DefaultLogFormat,
		socketPath:            DefaultSocketPath,
		socketMode:            strconv.FormatUint(uint64(DefaultSocketMode), 8),
		fileFlushIntervalMsec: uint64(DefaultFileFlushInterval.Milliseconds()),
		fileFlushMinSizeKB:    uint64(DefaultFileFlushMinSizeKB),
		drainTimeS:            uint64(DefaultDrainTime.Seconds()),
		drainStrategy:         "gradual",
		parentShutdownTimeS:   uint64(DefaultParentShutdownTime.Seconds()),
		terminationDrainTimeS: uint64(DefaultTerminationDrainTime.Seconds()),
		maxObjNameLen:         DefaultMaxObjNameLen,
		maxStats:              DefaultMaxStats,
		prometheusNaming:      "proxy",
	}
}

// option describes one command-line option: its names, its help text and
// where its value goes. The table below is the single source for both the
// parser and Usage, so the two cannot drift apart.
type option struct {
	long, short string
	// arg names the value in the help text; empty for a switch.
	arg string
	// def overrides the default shown in the help when the raw default value
	// would mislead (a default computed at run time, an empty "none").
	def   string
	help  string
	value func(*rawOptions) pflag.Value
}

// textOpt, switchOpt, uint32Opt and uint64Opt keep the table rows short:
// each turns a field selector into the pflag.Value that writes the field.
func textOpt(f func(*rawOptions) *string) func(*rawOptions) pflag.Value {
	return func(r *rawOptions) pflag.Value { return textValue{f(r)} }
}

func switchOpt(f func(*rawOptions) *bool) func(*rawOptions) pflag.Value {
	return func(r *rawOptions) pflag.Value { return switchValue{f(r)} }
}

func uint32Opt(f func(*rawOptions) *uint64) func(*rawOptions) pflag.Value {
	return func(r *rawOptions) pflag.Value { return uintValue{f(r), math.MaxUint32} }
}

func uint64Opt(f func(*rawOptions) *uint64) func(*rawOptions) pflag.Value {
	return func(r *rawOptions) pflag.Value { return uintValue{f(r), math.MaxUint64} }
}

// int32Opt is for values stored in an int: MaxInt32 fits an int everywhere.
func int32Opt(f func(*rawOptions) *uint64) func(*rawOptions) pflag.Value {
	return func(r *rawOptions) pflag.Value { return uintValue{f(r), math.MaxInt32} }
}

// optionTable lists every option in help order. It is never written.
var optionTable = [...]option{
	{long: "config-path", short: "c", arg: "path", def: "none",
		help:  "Bootstrap configuration file: .json, .yaml, .yml, .pb (binary proto3) or .pb_text (text proto3).",
		value: textOpt(func(r *rawOptions) *string { return &r.configPath })},
	{long: "config-yaml", arg: "yaml", def: "none",
		help:  "Inline bootstrap configuration in YAML (JSON also accepted), merged over --config-path.",
		value: textOpt(func(r *rawOptions) *string { return &r.configYAML })},
	{long: "bootstrap-version", arg: "integer", def: "unset",
		help:  "API version to load the bootstrap as; only 3 is supported.",
		value: int32Opt(func(r *rawOptions) *uint64 { return &r.bootstrapVersion })},
	{long: "mode", arg: "serve|validate|init_only",
		help:  "serve: validate the configuration, then serve; validate: check the configuration and exit; init_only: initialise and exit.",
		value: textOpt(func(r *rawOptions) *string { return &r.mode })},
	{long: "admin-address-path", arg: "path", def: "none",
		help:  "File the bound admin address is written to.",
		value: textOpt(func(r *rawOptions) *string { return &r.adminAddressPath })},
	{long: "local-address-ip-version", arg: "v4|v6",
		help:  "IP version of the server's local address; affects headers such as X-Forwarded-For.",
		value: textOpt(func(r *rawOptions) *string { return &r.localAddressIPVersion })},
	{long: "base-id", arg: "uint32",
		help:  "Base ID of the hot-restart shared memory; unique per proxy instance on a machine.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.baseID })},
	{long: "use-dynamic-base-id",
		help:  "Pick an unused base ID; supersedes --base-id; not allowed with a non-zero --restart-epoch.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.useDynamicBaseID })},
	{long: "base-id-path", arg: "path", def: "none",
		help:  "File the base ID is written to.",
		value: textOpt(func(r *rawOptions) *string { return &r.baseIDPath })},
	{long: "concurrency", arg: "uint32", def: "number of hardware threads",
		help:  "Number of worker threads; 0 runs one.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.concurrency })},
	{long: "cpuset-threads",
		help:  "Without --concurrency, run as many worker threads as the process's cpuset has CPUs (Linux).",
		value: switchOpt(func(r *rawOptions) *bool { return &r.cpusetThreads })},
	{long: "log-level", short: "l", arg: "level",
		help:  "Log level: [trace][debug][info][warning|warn][error][critical][off].",
		value: textOpt(func(r *rawOptions) *string { return &r.logLevel })},
	{long: "component-log-level", arg: "component:level,...", def: "none",
		help:  "Per-component log levels, for example upstream:debug,connection:trace; GET /logging lists the components.",
		value: textOpt(func(r *rawOptions) *string { return &r.componentLogLevel })},
	{long: "log-format", arg: "format",
		help:  "Log line format in spdlog syntax (%v message, %l level, %n logger, %t thread, ...).",
		value: textOpt(func(r *rawOptions) *string { return &r.logFormat })},
	{long: "log-format-escaped",
		help:  "Escape C-style escape sequences in log messages so that a record stays on one line.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.logFormatEscaped })},
	{long: "log-path", arg: "path", def: "stderr",
		help:  "Log file, reopened on SIGUSR1 and on POST /reopen_logs.",
		value: textOpt(func(r *rawOptions) *string { return &r.logPath })},
	{long: "enable-fine-grain-logging",
		help:  "One logger per source file, named by its path, with levels set through the admin interface.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.enableFineGrainLogging })},
	{long: "restart-epoch", arg: "uint32",
		help:  "Hot-restart epoch: 0 for a fresh start, incremented on each hot restart.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.restartEpoch })},
	{long: "socket-path", arg: "path",
		help:  "Hot-restart socket; a leading @ puts it in the abstract namespace.",
		value: textOpt(func(r *rawOptions) *string { return &r.socketPath })},
	{long: "socket-mode", arg: "octal",
		help:  "Permission of the hot-restart socket file; only with a --socket-path that does not start with @.",
		value: textOpt(func(r *rawOptions) *string { return &r.socketMode })},
	{long: "hot-restart-version",
		help:  "Print the hot-restart compatibility version and exit.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.hotRestartVersion })},
	{long: "service-cluster", arg: "string", def: "none",
		help:  "Local service cluster; overrides the bootstrap node.cluster.",
		value: textOpt(func(r *rawOptions) *string { return &r.serviceCluster })},
	{long: "service-node", arg: "string", def: "none",
		help:  "Local service node; overrides the bootstrap node.id.",
		value: textOpt(func(r *rawOptions) *string { return &r.serviceNode })},
	{long: "service-zone", arg: "string", def: "none",
		help:  "Local service zone; overrides the bootstrap node.locality.zone.",
		value: textOpt(func(r *rawOptions) *string { return &r.serviceZone })},
	{long: "file-flush-interval-msec", arg: "uint32",
		help:  "Milliseconds between flushes of buffered file writes; a full buffer is flushed sooner.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.fileFlushIntervalMsec })},
	{long: "file-flush-min-size-kb", arg: "uint32",
		help:  "KiB of buffered file writes that trigger a flush before the interval ends.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.fileFlushMinSizeKB })},
	{long: "drain-time-s", arg: "uint32",
		help:  "Seconds of connection draining on hot restart and listener removal; keep it below --parent-shutdown-time-s.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.drainTimeS })},
	{long: "drain-strategy", arg: "gradual|immediate",
		help:  "gradual: the share of requests asked to close grows to 100% over the drain time; immediate: all from the start.",
		value: textOpt(func(r *rawOptions) *string { return &r.drainStrategy })},
	{long: "parent-shutdown-time-s", arg: "uint32",
		help:  "Seconds before the parent process is shut down in a hot restart.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.parentShutdownTimeS })},
	{long: "termination-drain-time-s", arg: "uint32",
		help:  "Seconds of serving while draining after SIGTERM (readiness failed at once), then the listeners close and the process exits; 0 exits at once.",
		value: uint32Opt(func(r *rawOptions) *uint64 { return &r.terminationDrainTimeS })},
	{long: "exit-on-zero-active-connections",
		help:  "During the termination drain, exit as soon as no downstream connection is left.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.exitOnZeroActiveConnections })},
	{long: "max-obj-name-len", arg: "uint64",
		help:  "Older build: maximum length of cluster, route_config and listener names, at least 60; part of the hot-restart version.",
		value: uint64Opt(func(r *rawOptions) *uint64 { return &r.maxObjNameLen })},
	{long: "max-stats", arg: "uint64",
		help:  "Older build: maximum number of stats shared across hot restarts, at most 100000000; part of the hot-restart version.",
		value: uint64Opt(func(r *rawOptions) *uint64 { return &r.maxStats })},
	{long: "disable-hot-restart",
		help:  "Disable hot restart.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.disableHotRestart })},
	{long: "enable-mutex-tracing",
		help:  "Record mutex contention, reported by GET /contention.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.enableMutexTracing })},
	{long: "allow-unknown-static-fields",
		help:  "Accept unknown fields in the bootstrap (logged once, counted in server.static_unknown_fields).",
		value: switchOpt(func(r *rawOptions) *bool { return &r.allowUnknownStaticFields })},
	{long: "allow-unknown-fields",
		help:  "Deprecated alias of --allow-unknown-static-fields.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.allowUnknownFields })},
	{long: "reject-unknown-dynamic-fields",
		help:  "Reject unknown fields in dynamic configuration; without it they are accepted, logged once and counted in server.dynamic_unknown_fields.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.rejectUnknownDynamicFields })},
	{long: "ignore-unknown-dynamic-fields",
		help:  "Accept unknown fields in dynamic configuration without logging or counting them.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.ignoreUnknownDynamicFields })},
	{long: "disable-extensions", arg: "category/name,...", def: "none",
		help:  "Comma-separated extensions that configuration may not use although they are linked in.",
		value: textOpt(func(r *rawOptions) *string { return &r.disableExtensions })},
	{long: "stats-tag", arg: "name:value", def: "none",
		help:  "Tag added to every stat; repeatable. Names hold letters and digits, values anything but '.'.",
		value: func(r *rawOptions) pflag.Value { return listValue{&r.statsTags} }},
	{long: "prometheus-naming", arg: "proxy|envoy",
		help:  "Product word of Prometheus names and tag labels: proxy (proxy_cluster_upstream_rq{proxy_cluster_name=...}) or envoy, named exactly as Envoy does.",
		value: textOpt(func(r *rawOptions) *string { return &r.prometheusNaming })},
	{long: "enable-core-dump",
		help:  "Allow core dumps (Linux only).",
		value: switchOpt(func(r *rawOptions) *bool { return &r.enableCoreDump })},
	{long: "v2-config-only",
		help:  "Deprecated and without effect.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.v2ConfigOnly })},
	{long: "skip-hot-restart-on-no-parent",
		help:  "Start as a fresh process when the parent of a hot restart cannot be reached.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.skipHotRestartOnNoParent })},
	{long: "skip-hot-restart-parent-stats",
		help:  "Do not copy stats from the parent during a hot restart.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.skipHotRestartParentStats })},
	{long: "skip-deprecated-logs",
		help:  "Do not log uses of deprecated features.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.skipDeprecatedLogs })},
	{long: "log-stacktrace-single-entry",
		help:  "Log a stack trace as one log entry instead of one entry per frame.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.logStacktraceSingleEntry })},
	{long: "version",
		help:  "Print version and build information and exit.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.version })},
	{long: "help", short: "h",
		help:  "Print this help and exit.",
		value: switchOpt(func(r *rawOptions) *bool { return &r.help })},
}

// isSwitch reports whether the option takes no value.
func (o *option) isSwitch() bool { return o.arg == "" }

// newFlagSet returns a fresh, silent flag set whose options write into r.
func newFlagSet(r *rawOptions) *pflag.FlagSet {
	fs := pflag.NewFlagSet("sidecar", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	for i := range optionTable {
		o := &optionTable[i]
		f := fs.VarPF(o.value(r), o.long, o.short, o.help)
		if o.isSwitch() {
			f.NoOptDefVal = "true"
		}
	}
	return fs
}
