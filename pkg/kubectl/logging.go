package kubectl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// logCommand is `log POD [--level LEVEL] [component=level ...]`.
func logCommand() command {
	return command{
		name:    "log",
		usage:   "POD [--level LEVEL] [LOGGER=LEVEL ...]",
		summary: "show a pod's proxy log levels, or set them (/logging)",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVar(&o.level, "level", "", "set every logger to this level: trace, debug, info, warning, error, critical or off")
		},
		needsCluster: true,
		run:          runLog,
	}
}

// runLog lists the loggers' levels, or sets them and shows the levels the
// proxy reports afterwards.
func runLog(ctx context.Context, a *app, args []string) error {
	if len(args) < 1 {
		return usagef("log: want POD [LOGGER=LEVEL ...]")
	}
	levels := map[string]string{}
	for _, arg := range args[1:] {
		name, level, ok := strings.Cut(arg, "=")
		if !ok || name == "" || level == "" {
			return usagef("log: %q is not LOGGER=LEVEL", arg)
		}
		levels[name] = level
	}
	t, err := a.openPod(ctx, args[0])
	if err != nil {
		return err
	}
	defer t.close()
	if a.opts.level != "" {
		if err := t.wrap(t.session.SetAllLogLevels(ctx, a.opts.level)); err != nil {
			return err
		}
	}
	if err := t.wrap(t.session.SetLogLevels(ctx, levels)); err != nil {
		return err
	}
	now, err := t.session.LogLevels(ctx)
	if err != nil {
		return t.wrap(err)
	}
	for name := range levels {
		if _, ok := now[name]; !ok {
			return fmt.Errorf("pod %s/%s: the proxy has no logger %q", t.endpoint.Namespace, t.endpoint.Pod, name)
		}
	}
	names := make([]string, 0, len(now))
	for name := range now {
		// After a change to some loggers, show those; otherwise all.
		if len(levels) == 0 || levels[name] != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	tab := newTable(a.stdout, "LOGGER", "LEVEL")
	for _, name := range names {
		tab.row(name, now[name])
	}
	return tab.flush()
}
