// Command controller runs the Outrigger controller: a controller-runtime
// manager with leader election, metrics and health endpoints, and one
// reconciler per proxy.outrigger.dev kind. See README.md for its flags.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	clientconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

func main() {
	os.Exit(run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its context and outputs passed in; it returns the exit
// code. Bad flags and start-up failures are one line on stderr,
// "error: <reason>", and exit code 1.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseOptions(args)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, usage(fs))
			return 0
		}
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if o.help {
		fmt.Fprint(stdout, usage(fs))
		return 0
	}
	lvl, _ := level(o.logLevel) // validated
	log := logr.FromSlogHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	ctrl.SetLogger(log)
	klog.SetLogger(log)

	if err := start(ctx, o, log); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// start builds the managers and runs them until ctx ends.
//
// One manager serves what every replica serves: the injection webhook,
// the metrics and the health endpoints. With leader election, the
// reconcilers run in a second manager built for each term as leader (see
// leader); without it, in the first one.
func start(ctx context.Context, o options, log logr.Logger) error {
	injectCfg, err := injectConfig(o)
	if err != nil {
		return err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	// Out of a cluster client-go would allow 5 requests a second, in one
	// controller-runtime 20: the flags decide in both.
	cfg.QPS, cfg.Burst = o.kubeAPIQPS, o.kubeAPIBurst
	if o.webhookPort != 0 {
		if err := checkCertDir(o.webhookCertDir); err != nil {
			return err
		}
	}
	var namespace, identity string
	if o.leaderElect {
		if namespace, err = leaseNamespace(o.leaderElectionNamespace); err != nil {
			return err
		}
		if identity, err = leaseIdentity(o.leaderElectionIdentity); err != nil {
			return err
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}

	var transport adminclient.Transport
	switch o.transport {
	case transportDirect:
		transport = adminclient.NewDirect(o.adminTimeout)
	default:
		pf, err := adminclient.NewPortForward(cfg)
		if err != nil {
			return err
		}
		transport = pf
	}
	metrics, err := controller.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	reconcilerOpts := controller.Options{
		Admin:           adminclient.New(transport, o.adminTimeout, adminclient.WithObserver(metrics.AdminObserver())),
		Workers:         o.workers,
		RecheckInterval: o.recheckInterval,
		PollInterval:    o.pollInterval,
		Metrics:         metrics,
	}

	var namespaces map[string]cache.Config
	if len(o.namespaces) > 0 {
		namespaces = map[string]cache.Config{}
		for _, ns := range o.namespaces {
			namespaces[ns] = cache.Config{}
		}
	}
	// Without a webhook server in the options, the manager starts none
	// unless something asks it for one: with --webhook-port=0 nothing does.
	var webhookServer webhook.Server
	if o.webhookPort != 0 {
		webhookServer = webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.webhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Cache:                  cache.Options{DefaultNamespaces: namespaces},
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		WebhookServer:          webhookServer,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if !o.leaderElect {
		if err := controller.Setup(mgr, reconcilerOpts); err != nil {
			return err
		}
	} else {
		// Reconciles stop at once when the lease is lost (their context
		// ends); the grace period only covers the calls in flight.
		grace := o.adminTimeout + 5*time.Second
		l := &leader{
			config: cfg, namespace: namespace, name: o.leaderElectionID, identity: identity,
			lease: o.leaseDuration, renew: o.renewDeadline, retry: o.retryPeriod,
			stopTimeout: grace + 5*time.Second,
			acquired:    metrics.LeadershipAcquired,
			lost:        metrics.LeadershipLost,
			log:         log.WithName("leader"),
			lead: func(ctx context.Context) error {
				term, err := ctrl.NewManager(cfg, ctrl.Options{
					Scheme:                  scheme,
					Logger:                  log,
					Cache:                   cache.Options{DefaultNamespaces: namespaces},
					Metrics:                 metricsserver.Options{BindAddress: "0"},
					HealthProbeBindAddress:  "0",
					GracefulShutdownTimeout: &grace,
					// Each term registers the same controllers again.
					Controller: config.Controller{SkipNameValidation: ptr.To(true)},
				})
				if err != nil {
					return err
				}
				if err := controller.Setup(term, reconcilerOpts); err != nil {
					return err
				}
				return term.Start(ctx)
			},
		}
		if err := mgr.Add(l); err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("ready check: %w", err)
	}
	if webhookServer != nil {
		inject.Register(webhookServer, injectCfg, mgr.GetEventRecorder("outrigger-injector"))
		// Not ready until the webhook answers TLS handshakes: the
		// Service must not send pod creations to a replica that would
		// fail them.
		if err := mgr.AddReadyzCheck("webhook", webhookServer.StartedChecker()); err != nil {
			return fmt.Errorf("ready check: %w", err)
		}
	}
	log.Info("starting", "transport", o.transport, "workers", o.workers, "namespaces", o.namespaces, "leaderElection", o.leaderElect,
		"identity", identity, "kubeAPIQPS", o.kubeAPIQPS, "kubeAPIBurst", o.kubeAPIBurst, "webhookPort", o.webhookPort)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// restConfig loads --kubeconfig, or finds the configuration as kubectl
// does ($KUBECONFIG, in-cluster, ~/.kube/config).
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientconfig.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes configuration: %w", err)
	}
	return cfg, nil
}

// injectConfig is what the injection webhook makes proxies of: the
// --sidecar-* flags, with the bootstrap file read once, at start.
func injectConfig(o options) (inject.Config, error) {
	cfg := inject.Config{Image: o.sidecarImage, AdminPort: int32(o.sidecarAdminPort), ProbePort: int32(o.sidecarProbePort),
		PrometheusNaming: o.sidecarNaming, CaptureIPv6: o.sidecarIPv6, TLSSecret: o.sidecarTLSSecret}
	if o.controlPlane != "" {
		cp, err := controlPlane(o)
		if err != nil {
			return cfg, err
		}
		cfg.ControlPlane = cp
	}
	if o.sidecarBootstrap == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(o.sidecarBootstrap)
	if err != nil {
		return cfg, fmt.Errorf("--sidecar-bootstrap: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return cfg, fmt.Errorf("--sidecar-bootstrap: %s is empty", o.sidecarBootstrap)
	}
	cfg.Bootstrap = string(b)
	return cfg, nil
}

// controlPlane is the management server of the --sidecar-control-plane
// flags (checked by validate), with the CA file read once, at start.
func controlPlane(o options) (*inject.ControlPlane, error) {
	host, port, err := splitControlPlane(o.controlPlane)
	if err != nil {
		return nil, fmt.Errorf("--sidecar-control-plane: %w", err)
	}
	cp := &inject.ControlPlane{Address: host, Port: port, Delta: o.controlPlaneAPIType == "DELTA_GRPC", SNI: o.controlPlaneSNI}
	if o.controlPlaneCAFile != "" {
		b, err := os.ReadFile(o.controlPlaneCAFile)
		if err != nil {
			return nil, fmt.Errorf("--sidecar-control-plane-ca-file: %w", err)
		}
		cp.CABundle = string(b)
	}
	if err := cp.Validate(); err != nil {
		return nil, fmt.Errorf("--sidecar-control-plane: %w", err)
	}
	return cp, nil
}

// checkCertDir fails at once, with the remedy, when the webhook server's
// certificate or key is missing: the server would only fail once started,
// with a bare file error.
func checkCertDir(dir string) error {
	for _, name := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("--webhook-cert-dir: %w (mount the webhook's certificate there, or turn the webhook off with --webhook-port=0)", err)
		}
	}
	return nil
}
