package inject

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// captureContainer is the init container that installs the pod's
// transparent-capture rules with the sidecar's capture subcommand, then
// exits. It is a regular init container placed before the proxy, so the
// rules are in place before any of the pod's traffic, the proxy's own
// included. It needs root with NET_ADMIN (to change the pod's iptables)
// and NET_RAW, and nothing else; the rules live in the pod's network
// namespace, so nothing of the node changes.
func captureContainer(cfg Config, opts podOptions) corev1.Container {
	return corev1.Container{
		Name:      CaptureContainerName,
		Image:     cfg.Image,
		Args:      captureArgs(cfg, opts),
		Resources: opts.resources(),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(false),
			RunAsUser:                ptr.To[int64](0),
			Capabilities: &corev1.Capabilities{
				Add:  []corev1.Capability{"NET_ADMIN", "NET_RAW"},
				Drop: []corev1.Capability{"ALL"},
			},
		},
	}
}

// captureArgs is the capture subcommand's command line. The proxy's own
// ports (admin, probe and the two capture listeners) are always excluded
// from inbound capture.
func captureArgs(cfg Config, opts podOptions) []string {
	itoa := func(n int) string { return strconv.Itoa(n) }
	excluded := []string{
		itoa(int(opts.adminPort)), itoa(int(cfg.ProbePort)),
		itoa(OutboundCapturePort), itoa(InboundCapturePort),
	}
	for _, p := range opts.excludeInboundPorts {
		if !slices.Contains(excluded, p) {
			excluded = append(excluded, p)
		}
	}
	args := []string{
		"capture",
		"--proxy-uid", itoa(proxyUser),
		"--proxy-gid", itoa(proxyUser),
		"--inbound-capture-port", itoa(InboundCapturePort),
		"--outbound-capture-port", itoa(OutboundCapturePort),
		"--include-inbound-ports", opts.includeInboundPorts,
		"--exclude-inbound-ports", strings.Join(excluded, ","),
		"--include-outbound-cidrs", opts.includeOutboundCIDRs,
	}
	if len(opts.excludeOutboundCIDRs) > 0 {
		args = append(args, "--exclude-outbound-cidrs", strings.Join(opts.excludeOutboundCIDRs, ","))
	}
	if len(opts.excludeOutboundPorts) > 0 {
		args = append(args, "--exclude-outbound-ports", strings.Join(opts.excludeOutboundPorts, ","))
	}
	return args
}
