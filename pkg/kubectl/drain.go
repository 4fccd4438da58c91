package kubectl

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// drainCommand is `drain POD [--graceful] [--inbound-only]`.
func drainCommand() command {
	return command{
		name:    "drain",
		usage:   "POD [--graceful] [--inbound-only]",
		summary: "drain a pod's proxy listeners (/drain_listeners); the ProxyDrain resource does it fleet-wide, with health checks and timeouts",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.BoolVar(&o.graceful, "graceful", false, "run the drain sequence (--drain-time-s, --drain-strategy) before the listeners close")
			fs.BoolVar(&o.inboundOnly, "inbound-only", false, "drain only INBOUND listeners")
		},
		needsCluster: true,
		run:          runDrain,
	}
}

// runDrain calls /drain_listeners once.
func runDrain(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("drain: want POD, got %d arguments", len(args))
	}
	t, err := a.openPod(ctx, args[0])
	if err != nil {
		return err
	}
	defer t.close()
	o := adminclient.DrainOptions{Graceful: a.opts.graceful, InboundOnly: a.opts.inboundOnly}
	if err := t.wrap(t.session.DrainListeners(ctx, o)); err != nil {
		return err
	}
	var how []string
	if o.Graceful {
		how = append(how, "graceful")
	}
	if o.InboundOnly {
		how = append(how, "inbound only")
	}
	what := "listeners"
	if len(how) > 0 {
		what += " (" + strings.Join(how, ", ") + ")"
	}
	_, err = fmt.Fprintf(a.stdout, "pod %s/%s: draining %s\n", t.endpoint.Namespace, t.endpoint.Pod, what)
	return err
}
