package kubectl

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// tapIssue is the issue of /tap streaming, in the project's tracker.
const tapIssue = "issue #17"

// tapCommand is `tap POD --config-id ID`.
func tapCommand() command {
	return command{
		name:    "tap",
		usage:   "POD --config-id ID",
		summary: "stream a tap of a pod's proxy (/tap): not available yet in the plugin (issue #17); use port-forward and POST /tap",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVar(&o.configID, "config-id", "", "config_id of the tap filter (envoy.filters.http.tap admin_config) to stream")
		},
		needsCluster: true,
		run:          runTap,
	}
}

// runTap refuses: the plugin does not stream /tap yet. It asks the
// proxy's /help, so that the refusal says what the pod's proxy offers
// (/tap exists only with a tap filter configured with admin_config).
func runTap(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("tap: want POD, got %d arguments", len(args))
	}
	if a.opts.configID == "" {
		return usagef("tap: --config-id is required")
	}
	t, err := a.openPod(ctx, args[0])
	if err != nil {
		return err
	}
	defer t.close()
	help, err := t.get(ctx, "/help", nil)
	if err != nil {
		return err
	}
	if !hasEndpoint(string(help), "/tap") {
		return fmt.Errorf("tap: the proxy of pod %s/%s has no /tap admin endpoint: its configuration has no tap filter "+
			"(envoy.filters.http.tap) with admin_config", t.endpoint.Namespace, t.endpoint.Pod)
	}
	return fmt.Errorf("tap: the proxy of pod %s/%s serves /tap, but this plugin does not stream taps yet (%s); "+
		"use kubectl port-forward and POST /tap with the tap configuration", t.endpoint.Namespace, t.endpoint.Pod, tapIssue)
}

// hasEndpoint reports whether a /help listing has path: one line per
// endpoint, "  /<path>: <help>", its parameters indented further.
func hasEndpoint(help, path string) bool {
	for _, line := range strings.Split(help, "\n") {
		item, ok := strings.CutPrefix(line, "  /")
		if p, _, found := strings.Cut(item, ":"); ok && found && "/"+p == path {
			return true
		}
	}
	return false
}
