package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestCapture checks the capture init container and the proxy's capture
// bootstrap directly, so that a golden file refreshed by mistake cannot
// hide their loss.
func TestCapture(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		args        []string // after "capture"
	}{
		"defaults": {
			annotations: map[string]string{AnnotationCapture: "true"},
			args: []string{"--proxy-uid", "65532", "--proxy-gid", "65532",
				"--inbound-capture-port", "15006", "--outbound-capture-port", "15001",
				"--include-inbound-ports", "*", "--exclude-inbound-ports", "9901,9902,15001,15006",
				"--include-outbound-cidrs", "*"},
		},
		"every list": {
			annotations: map[string]string{
				AnnotationCapture:                "true",
				AnnotationIncludeInboundPorts:    "8080, 8443",
				AnnotationExcludeInboundPorts:    "9902,8081",
				AnnotationExcludeOutboundPorts:   "5432,6379",
				AnnotationIncludeOutboundCIDRs:   "10.0.0.0/8,fd00::/8",
				AnnotationExcludeOutboundCIDRs:   "10.96.0.1/32",
				"proxy.outrigger.dev/admin-port": "15000",
			},
			args: []string{"--proxy-uid", "65532", "--proxy-gid", "65532",
				"--inbound-capture-port", "15006", "--outbound-capture-port", "15001",
				"--include-inbound-ports", "8080,8443", "--exclude-inbound-ports", "15000,9902,15001,15006,8081",
				"--include-outbound-cidrs", "10.0.0.0/8,fd00::/8",
				"--exclude-outbound-cidrs", "10.96.0.1/32", "--exclude-outbound-ports", "5432,6379"},
		},
		"no inbound port": {
			annotations: map[string]string{AnnotationCapture: "true", AnnotationIncludeInboundPorts: ""},
			args: []string{"--proxy-uid", "65532", "--proxy-gid", "65532",
				"--inbound-capture-port", "15006", "--outbound-capture-port", "15001",
				"--include-inbound-ports", "", "--exclude-inbound-ports", "9901,9902,15001,15006",
				"--include-outbound-cidrs", "*"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, err := injected(t, tc.annotations, nil)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if diff := cmp.Diff([]string{"proxy-capture", "proxy", "migrate"}, names(pod.Spec.InitContainers)); diff != "" {
				t.Fatalf("init containers (-want +got):\n%s", diff)
			}
			c := pod.Spec.InitContainers[0]
			if c.Image != DefaultImage || c.RestartPolicy != nil {
				t.Errorf("capture container image %q, restartPolicy %v: want the sidecar image, a regular init container", c.Image, c.RestartPolicy)
			}
			if diff := cmp.Diff(append([]string{"capture"}, tc.args...), c.Args); diff != "" {
				t.Errorf("capture args (-want +got):\n%s", diff)
			}
			sc := c.SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot ||
				sc.Privileged != nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("capture security context %+v: want root, runAsNonRoot false, unprivileged", sc)
			}
			wantCaps := &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}, Drop: []corev1.Capability{"ALL"}}
			if diff := cmp.Diff(wantCaps, sc.Capabilities); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
			proxy := proxyOf(t, pod)
			admin := int32(DefaultConfig().AdminPort)
			if tc.annotations["proxy.outrigger.dev/admin-port"] == "15000" {
				admin = 15000
			}
			if v, _ := argValue(proxy.Args, "--config-yaml"); v != CaptureBootstrap(admin, DefaultProbePort, false) {
				t.Errorf("the proxy's bootstrap is not CaptureBootstrap(%d, 9902):\n%s", admin, v)
			}
			if g := proxy.SecurityContext.RunAsGroup; g == nil || *g != 65532 || *proxy.SecurityContext.RunAsUser != 65532 {
				t.Errorf("proxy user %v group %v: want 65532, the capture's --proxy-uid and --proxy-gid", proxy.SecurityContext.RunAsUser, g)
			}
		})
	}
}
