package options

import (
	"fmt"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Defaults that other packages and the help text refer to.
const (
	// DefaultLogFormat is the newer build's --log-format default (spdlog
	// syntax, see the logging package).
	DefaultLogFormat = "[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v"
	// DefaultSocketPath is the hot-restart socket. The leading @ puts it in
	// Linux's abstract namespace, where file permissions do not apply.
	DefaultSocketPath = "@proxy_domain_socket"
	// DefaultSocketMode is the permission of a hot-restart socket file.
	DefaultSocketMode uint32 = 0o600
	// DefaultFileFlushInterval is --file-flush-interval-msec's default.
	DefaultFileFlushInterval = 10 * time.Second
	// DefaultFileFlushMinSizeKB is --file-flush-min-size-kb's default, as in Envoy.
	DefaultFileFlushMinSizeKB uint32 = 64
	// DefaultDrainTime is --drain-time-s's default.
	DefaultDrainTime = 600 * time.Second
	// DefaultTerminationDrainTime is --termination-drain-time-s's default:
	// long enough for Kubernetes to take a terminating pod out of its
	// Service's endpoints, well inside the default 30 s grace period.
	DefaultTerminationDrainTime = 5 * time.Second
	// DefaultParentShutdownTime is --parent-shutdown-time-s's default.
	DefaultParentShutdownTime = 900 * time.Second
	// DefaultMaxObjNameLen is --max-obj-name-len's default and also its minimum.
	DefaultMaxObjNameLen uint64 = 60
	// DefaultMaxStats is --max-stats's default.
	DefaultMaxStats uint64 = 16384
	// MaxMaxStats is the largest --max-stats accepted (100 million).
	MaxMaxStats uint64 = 100_000_000
)

// Action says what the process should do after parsing: run the proxy or
// print something and exit.
type Action int

// The actions, in precedence order when several are requested (help wins).
const (
	// ActionRun starts the proxy (in the chosen Mode).
	ActionRun Action = iota
	// ActionHelp prints Usage() and exits 0.
	ActionHelp
	// ActionVersion prints the version line and exits 0.
	ActionVersion
	// ActionHotRestartVersion prints HotRestartVersion() and exits 0.
	ActionHotRestartVersion
)

// String returns the action's name, for logs and test output.
func (a Action) String() string {
	switch a {
	case ActionRun:
		return "run"
	case ActionHelp:
		return "help"
	case ActionVersion:
		return "version"
	case ActionHotRestartVersion:
		return "hot_restart_version"
	default:
		return fmt.Sprintf("action(%d)", int(a))
	}
}

// Mode is --mode: how far the server goes with its configuration.
type Mode int

// The modes.
const (
	// ModeServe validates the configuration, then serves traffic.
	ModeServe Mode = iota
	// ModeValidate builds everything without binding ports, prints OK or the
	// errors, and exits.
	ModeValidate
	// ModeInitOnly initialises the server and exits without serving.
	ModeInitOnly
)

// String returns the mode as spelled on the command line.
func (m Mode) String() string {
	switch m {
	case ModeServe:
		return "serve"
	case ModeValidate:
		return "validate"
	case ModeInitOnly:
		return "init_only"
	default:
		return fmt.Sprintf("mode(%d)", int(m))
	}
}

// DrainStrategy is --drain-strategy: how quickly connections are asked to
// close during a drain.
type DrainStrategy int

// The drain strategies.
const (
	// DrainGradual encourages a share of requests to drain that grows to 100%
	// over the drain time.
	DrainGradual DrainStrategy = iota
	// DrainImmediate encourages every request to drain from the start.
	DrainImmediate
)

// String returns the strategy as spelled on the command line.
func (d DrainStrategy) String() string {
	switch d {
	case DrainGradual:
		return "gradual"
	case DrainImmediate:
		return "immediate"
	default:
		return fmt.Sprintf("drain_strategy(%d)", int(d))
	}
}

// ComponentLevel is one <component>:<level> item of --component-log-level.
type ComponentLevel struct {
	// Component is a logger name known to logging.IsComponent.
	Component string
	// Level is the level to set on that logger.
	Level logging.Level
}

// StatsTag is one --stats-tag: a tag added to every stat the proxy creates.
type StatsTag struct {
	// Name holds only ASCII letters and digits.
	Name string
	// Value may hold anything except a dot.
	Value string
}

// String returns the tag as given on the command line, "name:value".
func (t StatsTag) String() string { return t.Name + ":" + t.Value }

// Options is the parsed and validated command line. Every field holds its
// effective value: defaults are filled in, so callers never need to know
// which options were given.
type Options struct {
	// Action is what to do; when it is ActionHelp or ActionVersion only
	// Action is meaningful, the other fields keep their zero values.
	Action Action

	// ConfigPath is --config-path (-c): the bootstrap file.
	ConfigPath string
	// ConfigYAML is --config-yaml: inline bootstrap merged over ConfigPath.
	ConfigYAML string
	// BootstrapVersion is --bootstrap-version; 0 means unset. The bootstrap
	// package decides which versions it accepts.
	BootstrapVersion int
	// Mode is --mode (default ModeServe).
	Mode Mode
	// AdminAddressPath is --admin-address-path: where the bound admin
	// address is written.
	AdminAddressPath string
	// LocalAddressIPVersion is --local-address-ip-version: "v4" (default) or "v6".
	LocalAddressIPVersion string

	// BaseID is --base-id, the hot-restart shared-memory base ID.
	BaseID uint32
	// UseDynamicBaseID is --use-dynamic-base-id.
	UseDynamicBaseID bool
	// BaseIDPath is --base-id-path: where the base ID is written.
	BaseIDPath string

	// Concurrency is the effective number of worker threads, never below 1:
	// --concurrency (0 means 1), else the cpuset size with --cpuset-threads,
	// else the number of hardware threads.
	Concurrency uint32
	// CPUSetThreads is --cpuset-threads.
	CPUSetThreads bool

	// LogLevel is --log-level (-l), default info.
	LogLevel logging.Level
	// ComponentLogLevels is --component-log-level, in command-line order.
	ComponentLogLevels []ComponentLevel
	// ComponentLogLevelRaw is --component-log-level as given, for /server_info.
	ComponentLogLevelRaw string
	// LogFormat is --log-format (default DefaultLogFormat).
	LogFormat string
	// LogFormatSet: --log-format was given, which the bootstrap's
	// application_log_config.log_format cannot then set.
	LogFormatSet bool
	// LogFormatEscaped is --log-format-escaped.
	LogFormatEscaped bool
	// LogPath is --log-path; empty means stderr.
	LogPath string
	// EnableFineGrainLogging is --enable-fine-grain-logging.
	EnableFineGrainLogging bool

	// RestartEpoch is --restart-epoch (0 for a fresh start).
	RestartEpoch uint32
	// SocketPath is --socket-path (default DefaultSocketPath).
	SocketPath string
	// SocketMode is --socket-mode (default 0600); 0 when SocketPath is in
	// the abstract namespace, where a mode means nothing.
	SocketMode uint32

	// ServiceCluster is --service-cluster (overrides node.cluster).
	ServiceCluster string
	// ServiceNode is --service-node (overrides node.id).
	ServiceNode string
	// ServiceZone is --service-zone (overrides node.locality.zone).
	ServiceZone string

	// FileFlushInterval is --file-flush-interval-msec (default 10s).
	FileFlushInterval time.Duration
	// FileFlushMinSizeKB is --file-flush-min-size-kb (default 64).
	FileFlushMinSizeKB uint32
	// DrainTime is --drain-time-s (default 600s).
	DrainTime time.Duration
	// DrainStrategy is --drain-strategy (default DrainGradual).
	DrainStrategy DrainStrategy
	// ParentShutdownTime is --parent-shutdown-time-s (default 900s).
	ParentShutdownTime time.Duration
	// TerminationDrainTime is --termination-drain-time-s (an addition to
	// Envoy's command line, default DefaultTerminationDrainTime): how long
	// the server keeps serving while it drains after SIGTERM; zero exits at
	// once, as Envoy does.
	TerminationDrainTime time.Duration
	// ExitOnZeroActiveConnections is --exit-on-zero-active-connections (an
	// addition): end the termination drain as soon as no downstream
	// connection is left.
	ExitOnZeroActiveConnections bool

	// MaxObjNameLen is --max-obj-name-len (older build; default and minimum 60).
	MaxObjNameLen uint64
	// MaxStats is --max-stats (older build; default 16384, at most 100 million).
	MaxStats uint64

	// DisableHotRestart is --disable-hot-restart.
	DisableHotRestart bool
	// EnableMutexTracing is --enable-mutex-tracing (enables /contention).
	EnableMutexTracing bool
	// AllowUnknownStaticFields is --allow-unknown-static-fields, also set by
	// the deprecated --allow-unknown-fields.
	AllowUnknownStaticFields bool
	// RejectUnknownDynamicFields is --reject-unknown-dynamic-fields.
	RejectUnknownDynamicFields bool
	// IgnoreUnknownDynamicFields is --ignore-unknown-dynamic-fields.
	IgnoreUnknownDynamicFields bool
	// DisabledExtensions is --disable-extensions split on commas, empty
	// items dropped. Names are <category>/<name>; checking them against the
	// linked extensions is the server's job.
	DisabledExtensions []string
	// StatsTags is every --stats-tag, in command-line order.
	StatsTags []StatsTag
	// PrometheusNaming is --prometheus-naming (default stats.NamingProxy):
	// the product word of /stats/prometheus names and labels.
	PrometheusNaming stats.Naming
	// EnableCoreDump is --enable-core-dump.
	EnableCoreDump bool
	// V2ConfigOnly is the deprecated --v2-config-only; it changes nothing.
	V2ConfigOnly bool

	// SkipHotRestartOnNoParent is --skip-hot-restart-on-no-parent.
	SkipHotRestartOnNoParent bool
	// SkipHotRestartParentStats is --skip-hot-restart-parent-stats.
	SkipHotRestartParentStats bool
	// SkipDeprecatedLogs is --skip-deprecated-logs.
	SkipDeprecatedLogs bool
	// LogStacktraceSingleEntry is --log-stacktrace-single-entry.
	LogStacktraceSingleEntry bool

	// Warnings are messages to log once logging is up: the command line is
	// read before any logger exists, so Parse cannot log them itself.
	Warnings []string
}
