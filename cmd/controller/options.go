package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
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

	// The sidecar-injection webhook and the proxies it injects.
	webhookPort      int
	webhookCertDir   string
	sidecarImage     string
	sidecarBootstrap string
	sidecarAdminPort int
	sidecarProbePort int
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
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "port of the sidecar-injection webhook's HTTPS server (0 turns the webhook off)")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs",
		"folder of the webhook server's certificate and key (tls.crt, tls.key; reloaded when they change)")
	fs.StringVar(&o.sidecarImage, "sidecar-image", inject.DefaultImage, "image of the injected proxy container")
	fs.StringVar(&o.sidecarBootstrap, "sidecar-bootstrap", "",
		"bootstrap YAML file given to injected proxies (default: admin on 127.0.0.1:<sidecar-admin-port>, a read-only probe listener on 0.0.0.0:<sidecar-probe-port>)")
	fs.IntVar(&o.sidecarAdminPort, "sidecar-admin-port", v1alpha1.DefaultAdminPort, "admin port of injected proxies, recorded in the pod's proxy.outrigger.dev/admin-port annotation")
	fs.IntVar(&o.sidecarProbePort, "sidecar-probe-port", inject.DefaultProbePort, "probe listener port of injected proxies: the kubelet's probes and Prometheus's scrapes")
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
	if o.webhookPort < 0 || o.webhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port: %d is not a port number (0-65535)", o.webhookPort))
	}
	if o.webhookPort != 0 && o.webhookCertDir == "" {
		errs = append(errs, errors.New("--webhook-cert-dir: empty"))
	}
	if strings.TrimSpace(o.sidecarImage) == "" {
		errs = append(errs, errors.New("--sidecar-image: empty"))
	}
	for _, f := range []struct {
		name string
		port int
	}{{"--sidecar-admin-port", o.sidecarAdminPort}, {"--sidecar-probe-port", o.sidecarProbePort}} {
		if f.port < 1 || f.port > 65535 {
			errs = append(errs, fmt.Errorf("%s: %d is not a port number (1-65535)", f.name, f.port))
		}
	}
	if o.sidecarAdminPort == o.sidecarProbePort {
		errs = append(errs, fmt.Errorf("--sidecar-probe-port: %d is the admin port too", o.sidecarProbePort))
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
		"on the sidecar proxies of the pods they select, and injects the proxy into pods labelled\n" +
		"proxy.outrigger.dev/inject=true.\n\nFlags:\n" + fs.FlagUsages()
}
