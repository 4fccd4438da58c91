package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

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

	kubeAPIQPS   float32
	kubeAPIBurst int

	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	leaderElectionIdentity  string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration

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
	sidecarNaming    string
	sidecarIPv6      bool
	// The control plane injected proxies join, if any.
	controlPlane        string
	controlPlaneAPIType string
	controlPlaneCAFile  string
	controlPlaneSNI     string
	sidecarTLSSecret    string
}

// Defaults of the API client's rate limits. client-go's own (5 requests a
// second, bursts of 10) throttle a controller that writes the status of
// resources over hundreds of pods; these suit a fleet controller, in a
// cluster and out of one alike.
const (
	defaultKubeAPIQPS   = 50
	defaultKubeAPIBurst = 100
)

// Defaults of leader election: controller-runtime's (and client-go's
// usual) timings.
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
	defaultRetryPeriod   = 2 * time.Second
)

// leaderElectionFlags need --leader-elect: without it they would be
// accepted and do nothing.
var leaderElectionFlags = []string{
	"leader-election-id", "leader-election-namespace", "leader-election-identity",
	"leader-election-lease-duration", "leader-election-renew-deadline", "leader-election-retry-period",
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
	fs.Float32Var(&o.kubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS, "requests a second the controller's API client makes at most, on average")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst, "requests the controller's API client makes at once at most, above --kube-api-qps")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among replicas; only the leader makes admin calls")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "outrigger-controller.proxy.outrigger.dev", "name of the leader election Lease")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the controller's own, in a cluster)")
	fs.StringVar(&o.leaderElectionIdentity, "leader-election-identity", "",
		"this replica's name in the Lease; it must differ between replicas and stay the same across restarts, so that a restarted replica takes its own lease back at once (default: the host name, which is the pod name in a cluster)")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", defaultLeaseDuration,
		"how long the other replicas wait, after the leader's last renewal, before taking the lease")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", defaultRenewDeadline,
		"how long the leader tries to renew the lease before it stands down (and campaigns again)")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", defaultRetryPeriod, "how often the lease is tried, to take or renew it")
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
	fs.BoolVar(&o.sidecarIPv6, "sidecar-capture-ipv6", false,
		"the built-in capture bootstrap's listeners also listen on [::] (dual-stack clusters: the capture rules redirect IPv6 connections too)")
	fs.StringVar(&o.sidecarTLSSecret, "sidecar-tls-secret", "",
		"Secret (of each pod's namespace) mounted read-only at "+inject.TLSDir+" into injected proxies whose pod has no "+inject.AnnotationTLSSecret+" annotation (empty: none)")
	fs.StringVar(&o.sidecarNaming, "sidecar-prometheus-naming", "proxy",
		"Prometheus naming of injected proxies (their --prometheus-naming): proxy (proxy_ prefix) or envoy (Envoy's envoy_ names, for Envoy's dashboards and alerts)")
	fs.StringVar(&o.controlPlane, "sidecar-control-plane", "",
		"host:port of the xDS management server injected proxies join: their built-in bootstrap gets an ADS stream to it carrying clusters and listeners (empty: none)")
	fs.StringVar(&o.controlPlaneAPIType, "sidecar-control-plane-api-type", "GRPC",
		"protocol of the ADS stream to --sidecar-control-plane: GRPC (state of the world) or DELTA_GRPC (incremental)")
	fs.StringVar(&o.controlPlaneCAFile, "sidecar-control-plane-ca-file", "",
		"PEM file of the CA certificates that verify --sidecar-control-plane's certificate: the stream then uses TLS (read at start)")
	fs.StringVar(&o.controlPlaneSNI, "sidecar-control-plane-sni", "",
		"server name sent to and verified in --sidecar-control-plane's certificate (default: its host)")
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
	var errs []string
	if !o.leaderElect {
		for _, name := range leaderElectionFlags {
			if fs.Changed(name) {
				errs = append(errs, fmt.Sprintf("--%s: needs --leader-elect", name))
			}
		}
	}
	if err := o.validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return o, fs, errors.New(strings.Join(errs, "; "))
	}
	return o, fs, nil
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
	if o.sidecarTLSSecret != "" {
		if msgs := validation.IsDNS1123Subdomain(o.sidecarTLSSecret); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--sidecar-tls-secret: %q is not a Secret name: %s", o.sidecarTLSSecret, strings.Join(msgs, "; ")))
		}
	}
	if o.sidecarNaming != "proxy" && o.sidecarNaming != "envoy" {
		errs = append(errs, fmt.Errorf("--sidecar-prometheus-naming: %q is neither proxy nor envoy", o.sidecarNaming))
	}
	errs = append(errs, o.validateControlPlane()...)
	if o.sidecarAdminPort == o.sidecarProbePort {
		errs = append(errs, fmt.Errorf("--sidecar-probe-port: %d is the admin port too", o.sidecarProbePort))
	}
	if math.IsNaN(float64(o.kubeAPIQPS)) || o.kubeAPIQPS <= 0 || math.IsInf(float64(o.kubeAPIQPS), 0) {
		errs = append(errs, fmt.Errorf("--kube-api-qps: %g is not a positive number", o.kubeAPIQPS))
	}
	if o.kubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: %d is below 1", o.kubeAPIBurst))
	}
	if o.leaderElect {
		errs = append(errs, o.validateLeaderElection()...)
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

// validateControlPlane checks the --sidecar-control-plane flags (the CA
// file is read, and the whole checked, by injectConfig).
func (o *options) validateControlPlane() []error {
	var errs []error
	if o.controlPlane == "" {
		for _, f := range []struct{ name, value string }{
			{"--sidecar-control-plane-ca-file", o.controlPlaneCAFile}, {"--sidecar-control-plane-sni", o.controlPlaneSNI},
		} {
			if f.value != "" {
				errs = append(errs, fmt.Errorf("%s: needs --sidecar-control-plane", f.name))
			}
		}
		return errs
	}
	if _, _, err := splitControlPlane(o.controlPlane); err != nil {
		errs = append(errs, fmt.Errorf("--sidecar-control-plane: %w", err))
	}
	if o.controlPlaneAPIType != "GRPC" && o.controlPlaneAPIType != "DELTA_GRPC" {
		errs = append(errs, fmt.Errorf("--sidecar-control-plane-api-type: %q is neither GRPC nor DELTA_GRPC", o.controlPlaneAPIType))
	}
	if o.sidecarBootstrap != "" {
		errs = append(errs, errors.New("--sidecar-control-plane: a custom --sidecar-bootstrap names its own management server (dynamic_resources)"))
	}
	if o.controlPlaneSNI != "" && o.controlPlaneCAFile == "" {
		errs = append(errs, errors.New("--sidecar-control-plane-sni: only used with TLS (--sidecar-control-plane-ca-file)"))
	}
	return errs
}

// splitControlPlane splits host:port.
func splitControlPlane(hostPort string) (string, int32, error) {
	host, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 || host == "" {
		return "", 0, fmt.Errorf("%q is not host:port", hostPort)
	}
	return host, int32(port), nil
}

// validateLeaderElection checks the leader election flags, with client-go's
// rules for the timings.
func (o *options) validateLeaderElection() []error {
	var errs []error
	if o.leaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id: empty"))
	}
	if o.leaderElectionIdentity != "" && strings.TrimSpace(o.leaderElectionIdentity) != o.leaderElectionIdentity {
		errs = append(errs, fmt.Errorf("--leader-election-identity: %q has leading or trailing spaces", o.leaderElectionIdentity))
	}
	positive := true
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"--leader-election-lease-duration", o.leaseDuration}, {"--leader-election-renew-deadline", o.renewDeadline}, {"--leader-election-retry-period", o.retryPeriod}} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not positive", f.name, f.d))
			positive = false
		}
	}
	if !positive {
		return errs
	}
	if o.leaseDuration <= o.renewDeadline {
		errs = append(errs, fmt.Errorf("--leader-election-lease-duration: %s must be longer than --leader-election-renew-deadline (%s)", o.leaseDuration, o.renewDeadline))
	}
	if floor := time.Duration(leaderelection.JitterFactor * float64(o.retryPeriod)); o.renewDeadline <= floor {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline: %s must be longer than 1.2 × --leader-election-retry-period (%s)", o.renewDeadline, floor))
	}
	return errs
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
