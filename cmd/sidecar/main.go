// Command sidecar is the Outrigger proxy. It is configured like Envoy: a v3
// bootstrap file (-c) or YAML (--config-yaml) and Envoy's command line
// options. See README.md for every option and admin endpoint.
// `sidecar capture [flags]` installs the transparent-capture rules of a
// pod instead (package capture); `sidecar hot-restarter -- <options>` runs
// the proxy under a hot restarter (package hotrestart).
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/outrigger-dev/outrigger/pkg/admin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/capture"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
	"github.com/outrigger-dev/outrigger/pkg/proxy/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its outputs passed in; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "capture" {
		return capture.Run(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "hot-restarter" {
		return runHotRestarter(args[1:], stderr)
	}
	opts, err := options.Parse(args, options.DefaultEnvironment())
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	switch opts.Action {
	case options.ActionHelp:
		fmt.Fprint(stdout, options.Usage())
		return 0
	case options.ActionVersion:
		fmt.Fprintf(stdout, "\noutrigger  version: %s\n\n", options.BuildVersion())
		return 0
	case options.ActionHotRestartVersion:
		// Envoy prints this on stderr without a newline; scripts rely on it.
		fmt.Fprint(stderr, opts.HotRestartVersion())
		return 0
	}

	logs, err := logging.New(logConfig(opts, stderr))
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	defer logs.Close()
	mainLog := logs.Logger("main")
	for _, w := range opts.Warnings {
		logging.Warning(mainLog, w)
	}

	srv, err := build(opts, logs)
	if err != nil {
		for _, e := range fieldpath.Split(err) {
			logging.Critical(mainLog, "error initializing configuration", "path", opts.ConfigPath, "error", e.Error())
			fmt.Fprintf(stderr, "error initializing configuration '%s': %v\n", opts.ConfigPath, e)
		}
		return 1
	}
	if opts.Mode == options.ModeValidate {
		fmt.Fprintf(stdout, "configuration '%s' OK\n", opts.ConfigPath)
		return 0
	}

	var breakers admin.BreakerEventSource
	if srv.BreakerEventsEnabled() {
		// The stream exists only with a dashboard sink, as in Envoy.
		breakers = srv
	}
	adm := admin.New(admin.Options{
		Server:            srv,
		Health:            srv,
		Quit:              srv,
		Memory:            srv,
		Certs:             srv,
		Runtime:           runtimeView{srv},
		Logs:              logView{srv},
		Stats:             srv,
		PrometheusNaming:  opts.PrometheusNaming,
		Breakers:          breakers,
		Listeners:         srv,
		Drain:             drainView{srv},
		Tap:               srv.TapSource(),
		ConfigDump:        srv,
		Clusters:          clusterView{srv},
		HotRestartVersion: srv.HotRestartVersion(),
		ProfilePath:       srv.ProfilePath(),
		MutexTracing:      opts.EnableMutexTracing,
		AccessLog:         srv.AdminAccessLog(),
		AllowPath:         srv.AdminAllowPath(),
		Log:               srv.AdminLogger(),
	})
	runErr := srv.Run(context.Background(), adm.Handler())
	// The admin listener is down now: write out any profile left running.
	if err := adm.Close(); err != nil {
		logging.Warning(mainLog, "stopping the profilers", "error", err.Error())
	}
	if runErr != nil {
		logging.Critical(mainLog, "server failed", "error", runErr.Error())
		fmt.Fprintf(stderr, "error: %v\n", runErr)
		return 1
	}
	return 0
}

func logConfig(opts *options.Options, stderr io.Writer) logging.Config {
	levels := make(map[string]logging.Level, len(opts.ComponentLogLevels))
	for _, cl := range opts.ComponentLogLevels {
		levels[cl.Component] = cl.Level
	}
	return logging.Config{
		Level:           opts.LogLevel,
		ComponentLevels: levels,
		Format:          opts.LogFormat,
		Escaped:         opts.LogFormatEscaped,
		Path:            opts.LogPath,
		Stderr:          stderr,
		FlushInterval:   opts.FileFlushInterval,
		FineGrain:       opts.EnableFineGrainLogging,
	}
}

// build loads, validates and builds the configuration, collecting every
// error it can find.
func build(opts *options.Options, logs *logging.Registry) (*server.Server, error) {
	loaded, err := bootstrap.Load(bootstrap.LoadOptions{
		ConfigPath:               opts.ConfigPath,
		ConfigYAML:               opts.ConfigYAML,
		BootstrapVersion:         opts.BootstrapVersion,
		AllowUnknownStaticFields: opts.AllowUnknownStaticFields,
		ServiceCluster:           opts.ServiceCluster,
		ServiceNode:              opts.ServiceNode,
		ServiceZone:              opts.ServiceZone,
	})
	if err != nil && loaded == nil {
		return nil, err
	}
	ext := builtin.Registry()
	warnings, derr := ext.Disable(opts.DisabledExtensions)
	if derr != nil {
		return nil, derr
	}
	if err != nil {
		// Extensions of unknown types: report the rest of the file's
		// problems with them.
		return nil, loaded.Problems(ext)
	}
	for _, w := range warnings {
		logging.Warning(logs.Logger("config"), w)
	}
	cfg := server.Config{
		Options:       opts,
		Bootstrap:     loaded.Bootstrap,
		UnknownFields: loaded.UnknownFields,
		Extensions:    ext,
		Logs:          logs,
		HostRoot:      os.Getenv(server.HostRootEnv),
	}
	if err := bootstrap.Validate(loaded.Bootstrap, ext); err != nil {
		return nil, bootstrap.WithBuildErrors(err, buildErrors(cfg))
	}
	// The records from here on take application_log_config's format, as
	// Envoy's do once it has read its bootstrap.
	if err := bootstrap.ApplyApplicationLogFormat(loaded.Bootstrap, opts.LogFormatSet, logs); err != nil {
		return nil, err
	}
	return server.New(cfg)
}

// buildErrors builds a configuration that failed validation only to find
// the problems that building alone reveals, so that they are reported in
// the same run. The server is never run; it binds nothing until Run. Its
// builders may meet an invalid part validation already reported in a way
// they do not expect: a panic then just means no more errors to add.
func buildErrors(cfg server.Config) (err error) {
	defer func() {
		if recover() != nil {
			err = nil
		}
	}()
	_, err = server.New(cfg)
	return err
}
