package options

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// build validates the decoded values, derives the effective ones and
// collects the warnings. given holds the names of the options that appeared
// on the command line, for rules that depend on whether an option was set
// rather than on its value.
func build(raw *rawOptions, given map[string]bool, env Environment) (*Options, error) {
	o := &Options{
		Action:                     ActionRun,
		ConfigPath:                 raw.configPath,
		ConfigYAML:                 raw.configYAML,
		BootstrapVersion:           int(raw.bootstrapVersion), // at most MaxInt32 (int32Opt)
		AdminAddressPath:           raw.adminAddressPath,
		BaseID:                     uint32(raw.baseID), // the uint32 options are range-checked by uintValue
		UseDynamicBaseID:           raw.useDynamicBaseID,
		BaseIDPath:                 raw.baseIDPath,
		CPUSetThreads:              raw.cpusetThreads,
		ComponentLogLevelRaw:       raw.componentLogLevel,
		LogFormat:                  raw.logFormat,
		LogFormatSet:               given["log-format"],
		LogFormatEscaped:           raw.logFormatEscaped,
		LogPath:                    raw.logPath,
		EnableFineGrainLogging:     raw.enableFineGrainLogging,
		RestartEpoch:               uint32(raw.restartEpoch),
		ServiceCluster:             raw.serviceCluster,
		ServiceNode:                raw.serviceNode,
		ServiceZone:                raw.serviceZone,
		FileFlushInterval:          time.Duration(raw.fileFlushIntervalMsec) * time.Millisecond,
		FileFlushMinSizeKB:         uint32(raw.fileFlushMinSizeKB),
		DrainTime:                  time.Duration(raw.drainTimeS) * time.Second,
		ParentShutdownTime:         time.Duration(raw.parentShutdownTimeS) * time.Second,
		MaxObjNameLen:              raw.maxObjNameLen,
		MaxStats:                   raw.maxStats,
		DisableHotRestart:          raw.disableHotRestart,
		EnableMutexTracing:         raw.enableMutexTracing,
		AllowUnknownStaticFields:   raw.allowUnknownStaticFields || raw.allowUnknownFields,
		RejectUnknownDynamicFields: raw.rejectUnknownDynamicFields,
		IgnoreUnknownDynamicFields: raw.ignoreUnknownDynamicFields,
		DisabledExtensions:         splitExtensions(raw.disableExtensions),
		EnableCoreDump:             raw.enableCoreDump,
		V2ConfigOnly:               raw.v2ConfigOnly,
		SkipHotRestartOnNoParent:   raw.skipHotRestartOnNoParent,
		SkipHotRestartParentStats:  raw.skipHotRestartParentStats,
		SkipDeprecatedLogs:         raw.skipDeprecatedLogs,
		LogStacktraceSingleEntry:   raw.logStacktraceSingleEntry,
	}
	// Outrigger's additions to Envoy's command line.
	o.TerminationDrainTime = time.Duration(raw.terminationDrainTimeS) * time.Second
	o.ExitOnZeroActiveConnections = raw.exitOnZeroActiveConnections
	if raw.hotRestartVersion {
		o.Action = ActionHotRestartVersion
	}

	if o.MaxObjNameLen < DefaultMaxObjNameLen {
		return nil, fmt.Errorf("--max-obj-name-len must be at least %d", DefaultMaxObjNameLen)
	}
	if o.MaxStats > MaxMaxStats {
		return nil, fmt.Errorf("--max-stats must not exceed %d", MaxMaxStats)
	}

	var err error
	if o.LogLevel, err = logging.ParseCLILevel(raw.logLevel); err != nil {
		return nil, fmt.Errorf("invalid log level specified %s", quote(raw.logLevel))
	}
	if o.EnableFineGrainLogging && raw.componentLogLevel != "" {
		return nil, errors.New("--component-log-level will not work with --enable-fine-grain-logging")
	}
	if o.ComponentLogLevels, err = parseComponentLevels(raw.componentLogLevel); err != nil {
		return nil, err
	}
	if o.Mode, err = parseMode(raw.mode); err != nil {
		return nil, err
	}
	if raw.localAddressIPVersion != "v4" && raw.localAddressIPVersion != "v6" {
		return nil, fmt.Errorf("unknown IP address version %s", quote(raw.localAddressIPVersion))
	}
	o.LocalAddressIPVersion = raw.localAddressIPVersion

	if o.UseDynamicBaseID && o.RestartEpoch > 0 {
		return nil, fmt.Errorf("cannot use --restart-epoch=%d with --use-dynamic-base-id", o.RestartEpoch)
	}

	var warnings []string
	o.Concurrency, warnings = env.concurrency(given["concurrency"], raw.concurrency, raw.cpusetThreads)
	o.Warnings = append(o.Warnings, warnings...)

	if o.SocketPath, o.SocketMode, err = socket(raw, given); err != nil {
		return nil, err
	}
	if o.DrainStrategy, err = parseDrainStrategy(raw.drainStrategy); err != nil {
		return nil, err
	}
	if o.StatsTags, err = parseStatsTags(raw.statsTags); err != nil {
		return nil, err
	}
	if o.PrometheusNaming, err = stats.ParseNaming(raw.prometheusNaming); err != nil {
		return nil, fmt.Errorf("--prometheus-naming: %w", err)
	}

	if o.Action == ActionRun && o.ConfigPath == "" && o.ConfigYAML == "" {
		return nil, errors.New("at least one of --config-path or --config-yaml must be given")
	}

	o.Warnings = append(o.Warnings, advice(raw, o)...)
	return o, nil
}

// advice lists the warnings about options that are accepted but deprecated
// or ineffective as combined.
func advice(raw *rawOptions, o *Options) []string {
	var w []string
	if raw.allowUnknownFields {
		w = append(w, "--allow-unknown-fields is deprecated, use --allow-unknown-static-fields instead.")
	}
	if raw.v2ConfigOnly {
		w = append(w, "--v2-config-only is deprecated and has no effect.")
	}
	if o.IgnoreUnknownDynamicFields && o.RejectUnknownDynamicFields {
		w = append(w, "--ignore-unknown-dynamic-fields has no effect together with --reject-unknown-dynamic-fields.")
	}
	if !o.DisableHotRestart && o.DrainTime >= o.ParentShutdownTime {
		w = append(w, fmt.Sprintf("--drain-time-s (%d) should be less than --parent-shutdown-time-s (%d).",
			raw.drainTimeS, raw.parentShutdownTimeS))
	}
	return w
}

// parseMode parses --mode.
func parseMode(s string) (Mode, error) {
	switch s {
	case "serve":
		return ModeServe, nil
	case "validate":
		return ModeValidate, nil
	case "init_only":
		return ModeInitOnly, nil
	default:
		return 0, fmt.Errorf("unknown mode %s", quote(s))
	}
}

// parseDrainStrategy parses --drain-strategy. Envoy's message quotes the
// --mode value by mistake; ours quotes the strategy.
func parseDrainStrategy(s string) (DrainStrategy, error) {
	switch s {
	case "gradual":
		return DrainGradual, nil
	case "immediate":
		return DrainImmediate, nil
	default:
		return 0, fmt.Errorf("unknown drain-strategy %s", quote(s))
	}
}

// parseComponentLevels parses "<component>:<level>,...". Like Envoy, an
// empty item (a trailing comma) is an error, and "warn" is accepted.
func parseComponentLevels(s string) ([]ComponentLevel, error) {
	if s == "" {
		return nil, nil
	}
	var levels []ComponentLevel
	for item := range strings.SplitSeq(s, ",") {
		name, level, ok := strings.Cut(item, ":")
		if !ok || strings.Contains(level, ":") {
			return nil, fmt.Errorf("component log level not correctly specified %s", quote(item))
		}
		l, err := logging.ParseCLILevel(level)
		if err != nil {
			return nil, fmt.Errorf("invalid log level specified %s", quote(level))
		}
		if !logging.IsComponent(name) {
			return nil, fmt.Errorf("invalid component specified %s", quote(name))
		}
		levels = append(levels, ComponentLevel{Component: name, Level: l})
	}
	return levels, nil
}

// socket validates --socket-path and --socket-mode together. A mode means
// nothing for an abstract socket (no file), so giving one there is refused
// rather than ignored as Envoy does, and the reported mode is 0.
func socket(raw *rawOptions, given map[string]bool) (path string, mode uint32, err error) {
	path = raw.socketPath
	switch {
	case path == "":
		return "", 0, errors.New("--socket-path must not be empty")
	case given["socket-mode"] && (!given["socket-path"] || strings.HasPrefix(path, "@")):
		return "", 0, errors.New("--socket-mode is not allowed with an abstract (@) or unset --socket-path")
	case strings.HasPrefix(path, "@"):
		return path, 0, nil
	}
	m, err := strconv.ParseUint(raw.socketMode, 8, 32)
	if err != nil || m > 0o777 {
		return "", 0, fmt.Errorf("invalid socket-mode %s", quote(raw.socketMode))
	}
	return path, uint32(m), nil
}

// parseStatsTags parses every --stats-tag "name:value". Names are ASCII
// letters and digits and values contain no dot (the stat-name separator),
// as in Envoy; a name given twice is refused, as Envoy's help promises.
func parseStatsTags(items []string) ([]StatsTag, error) {
	var tags []StatsTag
	seen := make(map[string]bool, len(items))
	for _, item := range items {
		name, value, ok := strings.Cut(item, ":")
		switch {
		case !ok || name == "" || value == "":
			return nil, fmt.Errorf("misformatted stats-tag %s", quote(item))
		case strings.IndexFunc(name, func(r rune) bool { return !isASCIIAlnum(r) }) >= 0:
			return nil, fmt.Errorf("misformatted stats-tag %s contains invalid char in %s", quote(item), quote(name))
		case strings.Contains(value, "."):
			return nil, fmt.Errorf("misformatted stats-tag %s contains invalid char in %s", quote(item), quote(value))
		case seen[name]:
			return nil, fmt.Errorf("duplicate stats-tag name %s", quote(name))
		}
		seen[name] = true
		tags = append(tags, StatsTag{Name: name, Value: value})
	}
	return tags, nil
}

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// splitExtensions splits --disable-extensions. Extension names never hold
// spaces, so items are trimmed, and empty items are dropped ("a/b,,c/d").
func splitExtensions(s string) []string {
	var names []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			names = append(names, item)
		}
	}
	return names
}
