package inject

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// The per-pod injection controls. Each is read only from a pod that gets a
// proxy; a bad value refuses the pod with a message naming the annotation.
const (
	// AnnotationBootstrapConfigMap names a ConfigMap of the pod's namespace
	// whose key bootstrap.yaml replaces the proxy's whole bootstrap.
	AnnotationBootstrapConfigMap = "proxy.outrigger.dev/bootstrap-configmap"
	// AnnotationProxyCPU is the proxy container's CPU request.
	AnnotationProxyCPU = "proxy.outrigger.dev/proxy-cpu"
	// AnnotationProxyMemory is the proxy container's memory request.
	AnnotationProxyMemory = "proxy.outrigger.dev/proxy-memory"
	// AnnotationProxyCPULimit is the proxy container's CPU limit.
	AnnotationProxyCPULimit = "proxy.outrigger.dev/proxy-cpu-limit"
	// AnnotationProxyMemoryLimit is the proxy container's memory limit.
	AnnotationProxyMemoryLimit = "proxy.outrigger.dev/proxy-memory-limit"
	// AnnotationLogLevel is the proxy's --log-level.
	AnnotationLogLevel = "proxy.outrigger.dev/log-level"
	// AnnotationDrainTime is the proxy's --termination-drain-time-s, in
	// whole seconds.
	AnnotationDrainTime = "proxy.outrigger.dev/drain-time"
	// AnnotationCapture turns transparent capture on ("true") or off.
	AnnotationCapture = "proxy.outrigger.dev/capture"
	// AnnotationIncludeInboundPorts lists the inbound ports captured: a
	// comma list, "*" for all, "" for none.
	AnnotationIncludeInboundPorts = "proxy.outrigger.dev/include-inbound-ports"
	// AnnotationExcludeInboundPorts lists inbound ports never captured.
	AnnotationExcludeInboundPorts = "proxy.outrigger.dev/exclude-inbound-ports"
	// AnnotationExcludeOutboundPorts lists outbound ports never captured.
	AnnotationExcludeOutboundPorts = "proxy.outrigger.dev/exclude-outbound-ports"
	// AnnotationIncludeOutboundCIDRs lists the outbound destinations
	// captured: a comma list of CIDRs, or "*" for all.
	AnnotationIncludeOutboundCIDRs = "proxy.outrigger.dev/include-outbound-cidrs"
	// AnnotationExcludeOutboundCIDRs lists outbound destinations never
	// captured.
	AnnotationExcludeOutboundCIDRs = "proxy.outrigger.dev/exclude-outbound-cidrs"
	// AnnotationTLSSecret names a Secret of the pod's namespace (a
	// kubernetes.io/tls Secret, such as cert-manager issues: tls.crt,
	// tls.key and ca.crt) mounted read-only into the proxy at TLSDir, for
	// the bootstrap's tls_certificates and trusted_ca to read.
	AnnotationTLSSecret = "proxy.outrigger.dev/tls-secret"
	// AnnotationInjected marks a pod the webhook injected, so that the API
	// server's reinvocation leaves it alone while a pod that brings its own
	// container named like the proxy is refused.
	AnnotationInjected = "proxy.outrigger.dev/injected"
)

// captureAnnotations are the annotations that only mean something with
// capture on; without it they are refused rather than ignored.
var captureAnnotations = []string{
	AnnotationIncludeInboundPorts, AnnotationExcludeInboundPorts, AnnotationExcludeOutboundPorts,
	AnnotationIncludeOutboundCIDRs, AnnotationExcludeOutboundCIDRs,
}

// Defaults of the controls.
const (
	// defaultGracePeriod is Kubernetes's terminationGracePeriodSeconds
	// when the pod sets none.
	defaultGracePeriod = 30
	// maxDefaultDrain is the longest drain window the injector chooses by
	// itself: the sidecar's own default.
	maxDefaultDrain = 5
	// captureAll is the "every port" or "every destination" value.
	captureAll = "*"
)

// Refusal is a pod the webhook will not inject: the annotation (or label)
// at fault and why. The webhook denies the pod's creation with its text.
type Refusal struct {
	// Annotation is the annotation or label whose value is refused.
	Annotation string
	// Reason says what is wrong with it.
	Reason string
}

// Error returns "annotation: reason".
func (r *Refusal) Error() string { return r.Annotation + ": " + r.Reason }

// refuse returns a Refusal.
func refuse(annotation, format string, args ...any) *Refusal {
	return &Refusal{Annotation: annotation, Reason: fmt.Sprintf(format, args...)}
}

// podOptions are the controls read from one pod's annotations.
type podOptions struct {
	adminPort            int32
	bootstrapConfigMap   string
	tlsSecret            string
	requests, limits     map[string]resource.Quantity // by resource name
	logLevel             string
	drainTime            int64
	capture              bool
	includeInboundPorts  string
	excludeInboundPorts  []string
	excludeOutboundPorts []string
	includeOutboundCIDRs string
	excludeOutboundCIDRs []string
}

// parseOptions reads and checks the pod's controls; the first bad value is
// the refusal.
func parseOptions(annotations map[string]string, gracePeriod *int64, cfg Config) (podOptions, *Refusal) {
	o := podOptions{adminPort: cfg.AdminPort, includeInboundPorts: captureAll, includeOutboundCIDRs: captureAll}
	if v, ok := annotations[v1alpha1.AdminPortAnnotation]; ok {
		p, err := parsePort(v)
		if err != nil {
			return o, refuse(v1alpha1.AdminPortAnnotation, "%v", err)
		}
		o.adminPort = int32(p)
	}
	if v, ok := annotations[AnnotationBootstrapConfigMap]; ok {
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return o, refuse(AnnotationBootstrapConfigMap, "%q is not a ConfigMap name: %s", v, strings.Join(errs, "; "))
		}
		o.bootstrapConfigMap = v
	}
	o.tlsSecret = cfg.TLSSecret
	if v, ok := annotations[AnnotationTLSSecret]; ok {
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return o, refuse(AnnotationTLSSecret, "%q is not a Secret name: %s", v, strings.Join(errs, "; "))
		}
		o.tlsSecret = v
	}
	if r := o.parseResources(annotations); r != nil {
		return o, r
	}
	if v, ok := annotations[AnnotationLogLevel]; ok {
		if _, err := logging.ParseCLILevel(v); err != nil {
			return o, refuse(AnnotationLogLevel, "%q is not a log level (one of %s, or warn)", v, strings.Join(logging.LevelNames(), ", "))
		}
		o.logLevel = v
	}
	if r := o.parseDrainTime(annotations, gracePeriod); r != nil {
		return o, r
	}
	if r := o.parseCapture(annotations); r != nil {
		return o, r
	}
	return o, o.checkAdminPort(cfg)
}

// checkAdminPort refuses an admin port that another of the proxy's
// listeners already binds: the proxy would fail to start.
func (o *podOptions) checkAdminPort(cfg Config) *Refusal {
	taken := map[int32]string{cfg.ProbePort: "the probe port"}
	if o.capture {
		taken[OutboundCapturePort] = "the outbound capture port"
		taken[InboundCapturePort] = "the inbound capture port"
	}
	if what, ok := taken[o.adminPort]; ok {
		return refuse(v1alpha1.AdminPortAnnotation, "%d is %s", o.adminPort, what)
	}
	return nil
}

// parseResources reads the four resource annotations. A request above its
// limit is refused; the default request is lowered to a limit below it.
func (o *podOptions) parseResources(annotations map[string]string) *Refusal {
	o.requests = map[string]resource.Quantity{"cpu": resource.MustParse(requestCPU), "memory": resource.MustParse(requestMemory)}
	o.limits = map[string]resource.Quantity{}
	for _, a := range []struct {
		name, resource string
		into           map[string]resource.Quantity
	}{
		{AnnotationProxyCPU, "cpu", o.requests},
		{AnnotationProxyMemory, "memory", o.requests},
		{AnnotationProxyCPULimit, "cpu", o.limits},
		{AnnotationProxyMemoryLimit, "memory", o.limits},
	} {
		v, ok := annotations[a.name]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return refuse(a.name, "%q is not a quantity (like 100m or 128Mi): %v", v, err)
		}
		if q.Sign() <= 0 {
			return refuse(a.name, "%q is not above zero", v)
		}
		a.into[a.resource] = q
	}
	for _, r := range []struct{ resource, request, limit string }{
		{"cpu", AnnotationProxyCPU, AnnotationProxyCPULimit},
		{"memory", AnnotationProxyMemory, AnnotationProxyMemoryLimit},
	} {
		limit, ok := o.limits[r.resource]
		req := o.requests[r.resource]
		if !ok || req.Cmp(limit) <= 0 {
			continue
		}
		if _, set := annotations[r.request]; set {
			return refuse(r.request, "%s is above the limit %s (%s)", req.String(), limit.String(), r.limit)
		}
		o.requests[r.resource] = limit
	}
	return nil
}

// parseDrainTime reads the drain window, or derives it from the pod's
// grace period: min(5, grace-1), at least 0, so that the proxy has a
// second left after the window to end in-flight requests and exit before
// the kubelet kills it.
func (o *podOptions) parseDrainTime(annotations map[string]string, gracePeriod *int64) *Refusal {
	grace := int64(defaultGracePeriod)
	if gracePeriod != nil {
		grace = *gracePeriod
	}
	v, ok := annotations[AnnotationDrainTime]
	if !ok {
		o.drainTime = max(0, min(maxDefaultDrain, grace-1))
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return refuse(AnnotationDrainTime, "%q is not a whole number of seconds, 0 or more", v)
	}
	if n > 0 && n >= grace {
		return refuse(AnnotationDrainTime, "%d s is not below the pod's terminationGracePeriodSeconds (%d): the kubelet would kill the proxy while it drains", n, grace)
	}
	o.drainTime = n
	return nil
}

// parseCapture reads the capture switch and its port and CIDR lists.
func (o *podOptions) parseCapture(annotations map[string]string) *Refusal {
	switch v := annotations[AnnotationCapture]; v {
	case "true":
		o.capture = true
	case "false", "":
		if _, ok := annotations[AnnotationCapture]; ok && v == "" {
			return refuse(AnnotationCapture, `"" is neither "true" nor "false"`)
		}
		for _, a := range captureAnnotations {
			if _, ok := annotations[a]; ok {
				return refuse(a, "only with %s: \"true\"", AnnotationCapture)
			}
		}
		return nil
	default:
		return refuse(AnnotationCapture, "%q is neither \"true\" nor \"false\"", v)
	}
	var err *Refusal
	if v, ok := annotations[AnnotationIncludeInboundPorts]; ok {
		if o.includeInboundPorts, err = portsOrAll(AnnotationIncludeInboundPorts, v); err != nil {
			return err
		}
	}
	if o.excludeInboundPorts, err = portList(AnnotationExcludeInboundPorts, annotations[AnnotationExcludeInboundPorts]); err != nil {
		return err
	}
	if o.excludeOutboundPorts, err = portList(AnnotationExcludeOutboundPorts, annotations[AnnotationExcludeOutboundPorts]); err != nil {
		return err
	}
	if v, ok := annotations[AnnotationIncludeOutboundCIDRs]; ok {
		if v == captureAll {
			o.includeOutboundCIDRs = v
		} else {
			cidrs, err := cidrList(AnnotationIncludeOutboundCIDRs, v)
			if err != nil {
				return err
			}
			if len(cidrs) == 0 {
				return refuse(AnnotationIncludeOutboundCIDRs, `"" captures nothing: list CIDRs, or "*" for every destination`)
			}
			o.includeOutboundCIDRs = strings.Join(cidrs, ",")
		}
	}
	o.excludeOutboundCIDRs, err = cidrList(AnnotationExcludeOutboundCIDRs, annotations[AnnotationExcludeOutboundCIDRs])
	return err
}

// portsOrAll reads "*", a port list, or "" (no port).
func portsOrAll(annotation, v string) (string, *Refusal) {
	if v == captureAll || v == "" {
		return v, nil
	}
	ports, err := portList(annotation, v)
	if err != nil {
		return "", err
	}
	return strings.Join(ports, ","), nil
}

// portList reads a comma list of ports; "" is the empty list.
func portList(annotation, v string) ([]string, *Refusal) {
	if v == "" {
		return nil, nil
	}
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		p, err := parsePort(strings.TrimSpace(item))
		if err != nil {
			return nil, refuse(annotation, "%v (want a comma list of ports)", err)
		}
		out = append(out, strconv.Itoa(p))
	}
	return out, nil
}

// parsePort reads one port number, 1 to 65535.
func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port (1 to 65535)", s)
	}
	return p, nil
}

// cidrList reads a comma list of CIDRs (IPv4 or IPv6); "" is the empty
// list.
func cidrList(annotation, v string) ([]string, *Refusal) {
	if v == "" {
		return nil, nil
	}
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, refuse(annotation, "%q is not a CIDR like 10.0.0.0/8 (want a comma list of CIDRs)", item)
		}
		out = append(out, p.String())
	}
	return out, nil
}
