package options

import (
	"fmt"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// CommandLineOptions returns the options as /server_info reports them
// (command_line_options). Every field is filled, including those at their
// default, because /server_info prints all of them. --max-obj-name-len and
// --max-stats have no field in the v3 message; they show in
// hot_restart_version instead.
//
// The options keep arguments byte for byte; here invalid UTF-8 is replaced
// (see utf8Safe).
func (o *Options) CommandLineOptions() *adminv3.CommandLineOptions {
	ipVersion := adminv3.CommandLineOptions_v4
	if o.LocalAddressIPVersion == "v6" {
		ipVersion = adminv3.CommandLineOptions_v6
	}
	mode := adminv3.CommandLineOptions_Serve
	switch o.Mode {
	case ModeValidate:
		mode = adminv3.CommandLineOptions_Validate
	case ModeInitOnly:
		mode = adminv3.CommandLineOptions_InitOnly
	}
	drain := adminv3.CommandLineOptions_Gradual
	if o.DrainStrategy == DrainImmediate {
		drain = adminv3.CommandLineOptions_Immediate
	}
	tags := make([]string, 0, len(o.StatsTags))
	for _, t := range o.StatsTags {
		tags = append(tags, utf8Safe(t.String()))
	}
	extensions := make([]string, 0, len(o.DisabledExtensions))
	for _, e := range o.DisabledExtensions {
		extensions = append(extensions, utf8Safe(e))
	}
	return &adminv3.CommandLineOptions{
		BaseId:                     uint64(o.BaseID),
		UseDynamicBaseId:           o.UseDynamicBaseID,
		SkipHotRestartOnNoParent:   o.SkipHotRestartOnNoParent,
		SkipHotRestartParentStats:  o.SkipHotRestartParentStats,
		BaseIdPath:                 utf8Safe(o.BaseIDPath),
		Concurrency:                o.Concurrency,
		ConfigPath:                 utf8Safe(o.ConfigPath),
		ConfigYaml:                 utf8Safe(o.ConfigYAML),
		AllowUnknownStaticFields:   o.AllowUnknownStaticFields,
		RejectUnknownDynamicFields: o.RejectUnknownDynamicFields,
		IgnoreUnknownDynamicFields: o.IgnoreUnknownDynamicFields,
		SkipDeprecatedLogs:         o.SkipDeprecatedLogs,
		AdminAddressPath:           utf8Safe(o.AdminAddressPath),
		LocalAddressIpVersion:      ipVersion,
		LogLevel:                   o.LogLevel.String(),
		ComponentLogLevel:          utf8Safe(o.ComponentLogLevelRaw),
		LogFormat:                  utf8Safe(o.LogFormat),
		LogFormatEscaped:           o.LogFormatEscaped,
		LogPath:                    utf8Safe(o.LogPath),
		ServiceCluster:             utf8Safe(o.ServiceCluster),
		ServiceNode:                utf8Safe(o.ServiceNode),
		ServiceZone:                utf8Safe(o.ServiceZone),
		FileFlushInterval:          durationpb.New(o.FileFlushInterval),
		FileFlushMinSize:           o.FileFlushMinSizeKB,
		DrainTime:                  durationpb.New(o.DrainTime),
		DrainStrategy:              drain,
		ParentShutdownTime:         durationpb.New(o.ParentShutdownTime),
		Mode:                       mode,
		DisableHotRestart:          o.DisableHotRestart,
		EnableMutexTracing:         o.EnableMutexTracing,
		RestartEpoch:               o.RestartEpoch,
		CpusetThreads:              o.CPUSetThreads,
		DisabledExtensions:         extensions,
		EnableFineGrainLogging:     o.EnableFineGrainLogging,
		LogStacktraceSingleEntry:   o.LogStacktraceSingleEntry,
		SocketPath:                 utf8Safe(o.SocketPath),
		SocketMode:                 o.SocketMode,
		EnableCoreDump:             o.EnableCoreDump,
		StatsTag:                   tags,
	}
}

// utf8Safe replaces invalid UTF-8 with U+FFFD. Arguments are bytes (a path
// may legally be any bytes), but proto3 strings must be UTF-8, and
// /server_info must render whatever the command line held.
func utf8Safe(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// HotRestartVersion is the opaque string that two processes must share to
// hot-restart into each other: "disabled" with --disable-hot-restart, else
// "1.<max-obj-name-len>.<max-stats>", since those two sizes fix the layout
// of the shared memory.
func (o *Options) HotRestartVersion() string {
	if o.DisableHotRestart {
		return "disabled"
	}
	return fmt.Sprintf("1.%d.%d", o.MaxObjNameLen, o.MaxStats)
}
