package kubectl

import (
	"context"
	"net/url"
	"regexp"

	"github.com/spf13/pflag"
)

// statsCommand is `stats POD [--filter REGEX]`.
func statsCommand() command {
	return command{
		name:    "stats",
		usage:   "POD [--filter REGEX] [-o json]",
		summary: "print a pod's proxy stats (/stats)",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVar(&o.filter, "filter", "", "only stats whose name matches this regular expression (the proxy's /stats?filter=)")
			fs.StringVarP(&o.output, "output", "o", outputTable, "output format: json (/stats?format=json); the proxy's text listing when unset")
		},
		needsCluster: true,
		run:          runStats,
	}
}

// runStats prints /stats as the proxy writes it.
func runStats(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("stats: want POD, got %d arguments", len(args))
	}
	if a.opts.output != outputTable && a.opts.output != outputJSON {
		return usagef("--output: %q is not json", a.opts.output)
	}
	q := url.Values{}
	if a.opts.filter != "" {
		// The proxy would refuse a bad expression too; checking here says
		// which flag is wrong before any connection.
		if _, err := regexp.Compile(a.opts.filter); err != nil {
			return usagef("--filter: %v", err)
		}
		q.Set("filter", a.opts.filter)
	}
	if a.opts.output == outputJSON {
		q.Set("format", "json")
	}
	t, err := a.openPod(ctx, args[0])
	if err != nil {
		return err
	}
	defer t.close()
	body, err := t.get(ctx, "/stats", q)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(body)
	return err
}
