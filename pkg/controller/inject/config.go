package inject

import "github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"

// Names and defaults of the injection contract shared with the Helm chart.
const (
	// InjectLabel selects the pods that get a proxy; its value must be
	// InjectLabelValue.
	InjectLabel = "proxy.outrigger.dev/inject"
	// InjectLabelValue is the only value of InjectLabel that injects.
	InjectLabelValue = "true"

	// DefaultImage is the proxy image of an injected container.
	DefaultImage = "ghcr.io/outrigger-dev/sidecar:latest"
	// DefaultProbePort is the port of the probe listener.
	DefaultProbePort = 9902
	// ProbePortName names the probe listener's container port; the probes
	// refer to it by name so that a custom port needs no other change.
	ProbePortName = "proxy-probe"
	// ContainerName is the injected container's name, the one the
	// reconcilers look for by default.
	ContainerName = v1alpha1.DefaultProxyContainer
	// CaptureContainerName is the init container that installs the
	// transparent-capture rules.
	CaptureContainerName = "proxy-capture"
	// OutboundCapturePort is the port of the listener virtualOutbound,
	// where capture redirects the pod's outbound connections.
	OutboundCapturePort = 15001
	// InboundCapturePort is the port of the listener virtualInbound,
	// where capture redirects the pod's inbound connections.
	InboundCapturePort = 15006
	// BootstrapVolume is the volume of a bootstrap ConfigMap, mounted into
	// the proxy at BootstrapDir.
	BootstrapVolume = "proxy-bootstrap"
	// BootstrapDir is where the proxy reads a bootstrap ConfigMap's
	// bootstrap.yaml.
	BootstrapDir = "/etc/outrigger"
	// BootstrapKey is the key of a bootstrap ConfigMap.
	BootstrapKey = "bootstrap.yaml"
	// TLSVolume is the volume of the certificate Secret, mounted into the
	// proxy at TLSDir.
	TLSVolume = "proxy-tls"
	// TLSDir is where the proxy reads the certificate Secret's keys: a
	// directory of its own, beside BootstrapDir rather than in it, so that
	// the two read-only volumes never nest.
	TLSDir = "/etc/outrigger-tls"
)

// Prometheus's conventional scrape annotations, set where absent.
const (
	annotationScrape = "prometheus.io/scrape"
	annotationPort   = "prometheus.io/port"
	annotationPath   = "prometheus.io/path"
	prometheusPath   = "/stats/prometheus"
)

// Config is what an injected proxy is made of.
type Config struct {
	// Image is the proxy container's image.
	Image string
	// Bootstrap is the proxy's bootstrap YAML, given with --config-yaml.
	// Empty means DefaultBootstrap(AdminPort, ProbePort).
	Bootstrap string
	// AdminPort is the admin interface's loopback port, recorded in the
	// pod's admin-port annotation for the reconcilers.
	AdminPort int32
	// ProbePort is the probe listener's port: the kubelet's probes and
	// Prometheus's scrapes go there.
	ProbePort int32
	// PrometheusNaming is the proxies' --prometheus-naming: "proxy" (or
	// empty, the sidecar's default, passed as nothing) or "envoy", so that
	// Envoy's dashboards and alerts work on the pods' scrapes.
	PrometheusNaming string
	// TLSSecret names the certificate Secret mounted at TLSDir into every
	// injected proxy whose pod does not name one with AnnotationTLSSecret;
	// empty: none.
	TLSSecret string
	// CaptureIPv6 makes the built-in capture bootstrap's listeners take
	// IPv6 connections too, for dual-stack clusters.
	CaptureIPv6 bool
	// ControlPlane, when set, makes the built-in bootstraps (default and
	// capture) join this management server over ADS. A custom Bootstrap
	// names its own.
	ControlPlane *ControlPlane
}

// DefaultConfig is the configuration of the controller's default flags.
func DefaultConfig() Config {
	return Config{Image: DefaultImage, AdminPort: v1alpha1.DefaultAdminPort, ProbePort: DefaultProbePort}
}

// bootstrap is the YAML the proxy gets, with its admin on adminPort: the
// controller's --sidecar-bootstrap if given, else the built-in bootstrap
// of the mode, joined to the control plane if there is one.
func (c Config) bootstrap(adminPort int32, capture bool) string {
	var b string
	switch {
	case c.Bootstrap != "":
		return c.Bootstrap
	case capture:
		b = CaptureBootstrap(adminPort, c.ProbePort, c.CaptureIPv6)
	default:
		b = DefaultBootstrap(adminPort, c.ProbePort)
	}
	if c.ControlPlane != nil {
		b = c.ControlPlane.join(b)
	}
	return b
}
