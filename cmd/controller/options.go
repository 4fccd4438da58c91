package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Transports the --transport flag names.
const (
	transportPortForward = "portforward"
	transportDirect      = "direct"
)

// options is the controller's command line.
type options struct {
	help bool

	kubeconfig string
	transport  string
	workers    int
	namespaces []string
	logLevel   string

	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string

	metricsAddr string
	probeAddr   string

	adminTimeout    time.Duration
	recheckInterval time.Duration
	pollInterval    time.Duration
}

// flags declares the command line on a new flag set.
func flags(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	fs.SortFlags = false
	// Errors are reported by run, on one line.
	fs.SetOutput(io.Discard)
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, the in-cluster configuration, or ~/.kube/config)")
	fs.StringVar(&o.transport, "transport", transportPortForward,
		"how admin calls reach a pod's proxy: portforward (through the API server's pods/portforward, to the pod's loopback) or direct (the pod IP and admin port)")
	fs.IntVar(&o.workers, "workers", 4, "resources of each kind reconciled at once")
	fs.StringSliceVar(&o.namespaces, "namespaces", nil, "namespaces to watch, comma-separated (default: all)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warning or error")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among replicas; only the leader makes admin calls")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "outrigger-controller.proxy.outrigger.dev", "name of the leader election Lease")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the controller's own, in a cluster)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" turns it off)`)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" turns them off)`)
	fs.DurationVar(&o.adminTimeout, "admin-timeout", 5*time.Second, "time limit of each admin call")
	fs.DurationVar(&o.recheckInterval, "recheck-interval", 30*time.Second,
		"how often proxies with an override or health check are asked their uptime, to find restarts")
	fs.DurationVar(&o.pollInterval, "poll-interval", time.Second, "how often a draining pod's connections are counted")
	return fs
}

// parseOptions reads and checks the command line.
func parseOptions(args []string) (options, *pflag.FlagSet, error) {
	var o options
	fs := flags(&o)
	if err := fs.Parse(args); err != nil {
		return o, fs, err
	}
	if o.help {
		return o, fs, nil
	}
	if fs.NArg() > 0 {
		return o, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, fs, o.validate()
}

// validate refuses values the controller cannot run with.
func (o *options) validate() error {
	var errs []error
	if o.transport != transportPortForward && o.transport != transportDirect {
		errs = append(errs, fmt.Errorf("--transport: %q is not portforward or direct", o.transport))
	}
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers: %d is below 1", o.workers))
	}
	if _, err := level(o.logLevel); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range o.namespaces {
		if strings.TrimSpace(ns) == "" {
			errs = append(errs, errors.New("--namespaces: empty namespace name"))
			break
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"--admin-timeout", o.adminTimeout}, {"--recheck-interval", o.recheckInterval}, {"--poll-interval", o.pollInterval}} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not positive", f.name, f.d))
		}
	}
	if o.leaderElect && o.leaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id: empty"))
	}
	// One line per run: the errors are joined with "; ".
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// level maps --log-level to a slog level.
func level(name string) (slog.Level, error) {
	switch name {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return 0, fmt.Errorf("--log-level: %q is not debug, info, warning or error", name)
	}
}

// usage is the --help text.
func usage(fs *pflag.FlagSet) string {
	return "Usage: controller [flags]\n\n" +
		"Turns ProxyDrain, ProxyRuntimeOverride and ProxyHealthCheck resources into admin calls\n" +
		"on the sidecar proxies of the pods they select.\n\nFlags:\n" + fs.FlagUsages()
}
