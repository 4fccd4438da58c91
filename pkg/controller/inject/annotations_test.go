package inject

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// injected injects a copy of appPod with the annotations (and the change
// made by edit, if any) into it and returns the pod, or the refusal.
func injected(t *testing.T, annotations map[string]string, edit func(*corev1.Pod)) (*corev1.Pod, error) {
	t.Helper()
	pod := appPod()
	pod.Annotations = annotations
	if edit != nil {
		edit(pod)
	}
	before := pod.DeepCopy()
	changed, err := Inject(pod, DefaultConfig())
	if err != nil {
		if changed {
			t.Errorf("Inject reported a change with its refusal")
		}
		if diff := cmp.Diff(before, pod); diff != "" {
			t.Errorf("a refused pod was changed (-before +after):\n%s", diff)
		}
		return nil, err
	}
	if !changed {
		t.Fatal("Inject reported no change")
	}
	return pod, nil
}

// proxyOf returns the injected proxy container.
func proxyOf(t *testing.T, pod *corev1.Pod) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.InitContainers {
		if c.Name == ContainerName {
			return c
		}
	}
	t.Fatalf("no proxy in %v", names(pod.Spec.InitContainers))
	return corev1.Container{}
}

// argValue returns the value after flag in args, and whether it is there.
func argValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

// TestControls checks the effect of each annotation's good values.
func TestControls(t *testing.T) {
	quantity := func(c corev1.Container, list, name string) string {
		l := c.Resources.Requests
		if list == "limits" {
			l = c.Resources.Limits
		}
		q, ok := l[corev1.ResourceName(name)]
		if !ok {
			return "none"
		}
		return q.String()
	}
	cases := map[string]struct {
		annotations map[string]string
		edit        func(*corev1.Pod)
		check       func(t *testing.T, pod *corev1.Pod, proxy corev1.Container)
	}{
		"default resources": {
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if quantity(c, "requests", "cpu") != requestCPU || quantity(c, "requests", "memory") != requestMemory || c.Resources.Limits != nil {
					t.Errorf("resources %+v: want the default requests and no limits", c.Resources)
				}
			},
		},
		"all four resources": {
			annotations: map[string]string{
				AnnotationProxyCPU: "250m", AnnotationProxyMemory: "100Mi",
				AnnotationProxyCPULimit: "1", AnnotationProxyMemoryLimit: "1Gi",
			},
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				got := []string{quantity(c, "requests", "cpu"), quantity(c, "requests", "memory"), quantity(c, "limits", "cpu"), quantity(c, "limits", "memory")}
				if diff := cmp.Diff([]string{"250m", "100Mi", "1", "1Gi"}, got); diff != "" {
					t.Errorf("resources (-want +got):\n%s", diff)
				}
			},
		},
		"limit below the default request lowers it": {
			annotations: map[string]string{AnnotationProxyMemoryLimit: "32Mi", AnnotationProxyCPULimit: "20m"},
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if quantity(c, "requests", "memory") != "32Mi" || quantity(c, "requests", "cpu") != "20m" {
					t.Errorf("requests %v: want them lowered to the limits 32Mi and 20m", c.Resources.Requests)
				}
			},
		},
		"request equal to its limit": {
			annotations: map[string]string{AnnotationProxyCPU: "1", AnnotationProxyCPULimit: "1000m"},
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if q := c.Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("1")) != 0 {
					t.Errorf("cpu request %s, want 1", q.String())
				}
			},
		},
		"log level": {
			annotations: map[string]string{AnnotationLogLevel: "debug"},
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if v, _ := argValue(c.Args, "--log-level"); v != "debug" {
					t.Errorf("--log-level %q, want debug", v)
				}
			},
		},
		"log level warn": {
			annotations: map[string]string{AnnotationLogLevel: "warn"},
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if v, _ := argValue(c.Args, "--log-level"); v != "warn" {
					t.Errorf("--log-level %q, want warn", v)
				}
			},
		},
		"no log level": {
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if _, ok := argValue(c.Args, "--log-level"); ok {
					t.Errorf("--log-level given without the annotation: %v", c.Args)
				}
			},
		},
		"drain time": {
			annotations: map[string]string{AnnotationDrainTime: "12"},
			check:       drainIs("12"),
		},
		"drain time 0": {
			annotations: map[string]string{AnnotationDrainTime: "0"},
			edit:        func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0) },
			check:       drainIs("0"),
		},
		"drain default, default grace": {check: drainIs("5")},
		"drain default, grace 3":       {edit: grace(3), check: drainIs("2")},
		"drain default, grace 1":       {edit: grace(1), check: drainIs("0")},
		"drain default, grace 0":       {edit: grace(0), check: drainIs("0")},
		"drain default, grace 120":     {edit: grace(120), check: drainIs("5")},
		"bootstrap configmap": {
			annotations: map[string]string{AnnotationBootstrapConfigMap: "shop-proxy"},
			check: func(t *testing.T, pod *corev1.Pod, c corev1.Container) {
				if v, _ := argValue(c.Args, "-c"); v != "/etc/outrigger/bootstrap.yaml" {
					t.Errorf("-c %q, want /etc/outrigger/bootstrap.yaml", v)
				}
				if _, ok := argValue(c.Args, "--config-yaml"); ok {
					t.Errorf("--config-yaml given beside the ConfigMap: %v", c.Args)
				}
				want := []corev1.VolumeMount{{Name: BootstrapVolume, MountPath: "/etc/outrigger", ReadOnly: true}}
				if diff := cmp.Diff(want, c.VolumeMounts); diff != "" {
					t.Errorf("mounts (-want +got):\n%s", diff)
				}
				if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].ConfigMap == nil || pod.Spec.Volumes[0].ConfigMap.Name != "shop-proxy" ||
					pod.Spec.Volumes[0].ConfigMap.Items[0].Key != "bootstrap.yaml" || pod.Spec.Volumes[0].ConfigMap.Optional != nil {
					t.Errorf("volumes %+v: want the ConfigMap shop-proxy's bootstrap.yaml, not optional", pod.Spec.Volumes)
				}
			},
		},
		"tls secret": {
			annotations: map[string]string{AnnotationTLSSecret: "shop-tls"},
			check: func(t *testing.T, pod *corev1.Pod, c corev1.Container) {
				want := []corev1.VolumeMount{{Name: TLSVolume, MountPath: "/etc/outrigger-tls", ReadOnly: true}}
				if diff := cmp.Diff(want, c.VolumeMounts); diff != "" {
					t.Errorf("mounts (-want +got):\n%s", diff)
				}
				wantVolumes := []corev1.Volume{{Name: "proxy-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "shop-tls"}}}}
				if diff := cmp.Diff(wantVolumes, pod.Spec.Volumes); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
			},
		},
		"tls secret beside a bootstrap configmap": {
			annotations: map[string]string{AnnotationTLSSecret: "shop-tls", AnnotationBootstrapConfigMap: "shop-proxy"},
			check: func(t *testing.T, pod *corev1.Pod, c corev1.Container) {
				want := []corev1.VolumeMount{
					{Name: BootstrapVolume, MountPath: "/etc/outrigger", ReadOnly: true},
					{Name: TLSVolume, MountPath: "/etc/outrigger-tls", ReadOnly: true},
				}
				if diff := cmp.Diff(want, c.VolumeMounts); diff != "" {
					t.Errorf("mounts (-want +got):\n%s", diff)
				}
				if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].ConfigMap == nil || pod.Spec.Volumes[1].Secret == nil {
					t.Errorf("volumes %+v: want the ConfigMap's and the Secret's", pod.Spec.Volumes)
				}
			},
		},
		"no tls secret, no volume": {
			check: func(t *testing.T, pod *corev1.Pod, c corev1.Container) {
				if len(c.VolumeMounts) != 0 || len(pod.Spec.Volumes) != 0 {
					t.Errorf("mounts %+v, volumes %+v: want none", c.VolumeMounts, pod.Spec.Volumes)
				}
			},
		},
		"admin port annotation moves the bootstrap's admin": {
			annotations: map[string]string{"proxy.outrigger.dev/admin-port": "19000"},
			check: func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
				if v, _ := argValue(c.Args, "--config-yaml"); v != DefaultBootstrap(19000, DefaultProbePort) {
					t.Errorf("bootstrap is not DefaultBootstrap(19000, 9902):\n%s", v)
				}
			},
		},
		"capture false": {
			annotations: map[string]string{AnnotationCapture: "false"},
			check: func(t *testing.T, pod *corev1.Pod, _ corev1.Container) {
				if len(pod.Spec.InitContainers) != 2 {
					t.Errorf("init containers %v: want no capture container", names(pod.Spec.InitContainers))
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, err := injected(t, tc.annotations, tc.edit)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			tc.check(t, pod, proxyOf(t, pod))
		})
	}
}

// TestConfigTLSSecret checks the chart-wide certificate Secret
// (--sidecar-tls-secret): mounted into pods that name none, and replaced
// by the one a pod names.
func TestConfigTLSSecret(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TLSSecret = "mesh-tls"
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, "mesh-tls"},
		{map[string]string{AnnotationTLSSecret: "shop-tls"}, "shop-tls"},
	} {
		pod := appPod()
		pod.Annotations = tc.annotations
		if _, err := Inject(pod, cfg); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Secret == nil || pod.Spec.Volumes[0].Secret.SecretName != tc.want {
			t.Errorf("annotations %v: volumes %+v, want the Secret %s", tc.annotations, pod.Spec.Volumes, tc.want)
		}
		if m := proxyOf(t, pod).VolumeMounts; len(m) != 1 || m[0].MountPath != TLSDir || !m[0].ReadOnly {
			t.Errorf("annotations %v: mounts %+v, want %s read-only", tc.annotations, m, TLSDir)
		}
	}
}

// grace sets the pod's terminationGracePeriodSeconds.
func grace(s int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(s) }
}

// drainIs checks the proxy's --termination-drain-time-s.
func drainIs(want string) func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
	return func(t *testing.T, _ *corev1.Pod, c corev1.Container) {
		t.Helper()
		if v, _ := argValue(c.Args, "--termination-drain-time-s"); v != want {
			t.Errorf("--termination-drain-time-s %q, want %s", v, want)
		}
	}
}

// TestRefusals checks that each bad value refuses the pod, unchanged, with
// a refusal naming the annotation.
func TestRefusals(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		edit        func(*corev1.Pod)
		annotation  string // the refusal's
		reason      string // part of its reason
	}{
		"cpu not a quantity":          {annotations: map[string]string{AnnotationProxyCPU: "lots"}, annotation: AnnotationProxyCPU, reason: `"lots" is not a quantity`},
		"memory not a quantity":       {annotations: map[string]string{AnnotationProxyMemory: "64 MB"}, annotation: AnnotationProxyMemory, reason: "is not a quantity"},
		"cpu limit not a quantity":    {annotations: map[string]string{AnnotationProxyCPULimit: "1x"}, annotation: AnnotationProxyCPULimit, reason: "is not a quantity"},
		"memory limit not a quantity": {annotations: map[string]string{AnnotationProxyMemoryLimit: ""}, annotation: AnnotationProxyMemoryLimit, reason: "is not a quantity"},
		"negative cpu":                {annotations: map[string]string{AnnotationProxyCPU: "-1"}, annotation: AnnotationProxyCPU, reason: "not above zero"},
		"zero memory limit":           {annotations: map[string]string{AnnotationProxyMemoryLimit: "0"}, annotation: AnnotationProxyMemoryLimit, reason: "not above zero"},
		"request above limit": {
			annotations: map[string]string{AnnotationProxyMemory: "512Mi", AnnotationProxyMemoryLimit: "256Mi"},
			annotation:  AnnotationProxyMemory, reason: "512Mi is above the limit 256Mi",
		},
		"bad log level":         {annotations: map[string]string{AnnotationLogLevel: "verbose"}, annotation: AnnotationLogLevel, reason: `"verbose" is not a log level (one of trace, debug, info, warning, error, critical, off, or warn)`},
		"log level in capitals": {annotations: map[string]string{AnnotationLogLevel: "DEBUG"}, annotation: AnnotationLogLevel, reason: "is not a log level"},
		"drain not a number":    {annotations: map[string]string{AnnotationDrainTime: "5s"}, annotation: AnnotationDrainTime, reason: `"5s" is not a whole number of seconds`},
		"drain negative":        {annotations: map[string]string{AnnotationDrainTime: "-1"}, annotation: AnnotationDrainTime, reason: "is not a whole number"},
		"drain fraction":        {annotations: map[string]string{AnnotationDrainTime: "1.5"}, annotation: AnnotationDrainTime, reason: "is not a whole number"},
		"drain huge":            {annotations: map[string]string{AnnotationDrainTime: "99999999999"}, annotation: AnnotationDrainTime, reason: "is not a whole number"},
		"drain not below grace": {
			annotations: map[string]string{AnnotationDrainTime: "30"}, annotation: AnnotationDrainTime,
			reason: "30 s is not below the pod's terminationGracePeriodSeconds (30)",
		},
		"drain above a short grace": {
			annotations: map[string]string{AnnotationDrainTime: "5"}, edit: grace(2), annotation: AnnotationDrainTime,
			reason: "(2)",
		},
		"configmap name":          {annotations: map[string]string{AnnotationBootstrapConfigMap: "Shop_Proxy"}, annotation: AnnotationBootstrapConfigMap, reason: `"Shop_Proxy" is not a ConfigMap name`},
		"configmap empty":         {annotations: map[string]string{AnnotationBootstrapConfigMap: ""}, annotation: AnnotationBootstrapConfigMap, reason: "is not a ConfigMap name"},
		"tls secret name":         {annotations: map[string]string{AnnotationTLSSecret: "Shop_TLS"}, annotation: AnnotationTLSSecret, reason: `"Shop_TLS" is not a Secret name`},
		"tls secret empty":        {annotations: map[string]string{AnnotationTLSSecret: ""}, annotation: AnnotationTLSSecret, reason: `"" is not a Secret name`},
		"tls secret volume clash": {annotations: map[string]string{AnnotationTLSSecret: "t"}, edit: func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: TLSVolume}} }, annotation: AnnotationTLSSecret, reason: `already has a volume named "proxy-tls"`},
		"configmap volume clash":  {annotations: map[string]string{AnnotationBootstrapConfigMap: "b"}, edit: func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: BootstrapVolume}} }, annotation: AnnotationBootstrapConfigMap, reason: `already has a volume named "proxy-bootstrap"`},
		"admin port":              {annotations: map[string]string{"proxy.outrigger.dev/admin-port": "70000"}, annotation: "proxy.outrigger.dev/admin-port", reason: `"70000" is not a port`},
		"own proxy container": {
			edit: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy"})
			},
			annotation: InjectLabel, reason: `already has a container named "proxy"`,
		},
		"own proxy init container": {
			edit: func(p *corev1.Pod) {
				p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "proxy", Image: "envoy"})
			},
			annotation: InjectLabel, reason: `already has a container named "proxy"`,
		},
		"own capture container": {
			annotations: map[string]string{AnnotationCapture: "true"},
			edit: func(p *corev1.Pod) {
				p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "proxy-capture"})
			},
			annotation: InjectLabel, reason: `already has a container named "proxy-capture"`,
		},
		"capture yes":          {annotations: map[string]string{AnnotationCapture: "yes"}, annotation: AnnotationCapture, reason: `"yes" is neither "true" nor "false"`},
		"capture empty":        {annotations: map[string]string{AnnotationCapture: ""}, annotation: AnnotationCapture, reason: "is neither"},
		"capture host network": {annotations: map[string]string{AnnotationCapture: "true"}, edit: func(p *corev1.Pod) { p.Spec.HostNetwork = true }, annotation: AnnotationCapture, reason: "host network"},
		"capture on windows": {
			annotations: map[string]string{AnnotationCapture: "true"}, annotation: AnnotationCapture, reason: "OS is windows",
			edit: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
		},
		"ports without capture":      {annotations: map[string]string{AnnotationExcludeInboundPorts: "8080"}, annotation: AnnotationExcludeInboundPorts, reason: `only with proxy.outrigger.dev/capture: "true"`},
		"cidrs with capture false":   {annotations: map[string]string{AnnotationCapture: "false", AnnotationExcludeOutboundCIDRs: "10.0.0.0/8"}, annotation: AnnotationExcludeOutboundCIDRs, reason: "only with"},
		"include inbound not ports":  {annotations: capture(AnnotationIncludeInboundPorts, "http"), annotation: AnnotationIncludeInboundPorts, reason: `"http" is not a port`},
		"include inbound zero":       {annotations: capture(AnnotationIncludeInboundPorts, "0"), annotation: AnnotationIncludeInboundPorts, reason: `"0" is not a port`},
		"include inbound star list":  {annotations: capture(AnnotationIncludeInboundPorts, "*,80"), annotation: AnnotationIncludeInboundPorts, reason: `"*" is not a port`},
		"exclude inbound star":       {annotations: capture(AnnotationExcludeInboundPorts, "*"), annotation: AnnotationExcludeInboundPorts, reason: `"*" is not a port`},
		"exclude inbound empty item": {annotations: capture(AnnotationExcludeInboundPorts, "80,,443"), annotation: AnnotationExcludeInboundPorts, reason: `"" is not a port`},
		"exclude outbound too big":   {annotations: capture(AnnotationExcludeOutboundPorts, "65536"), annotation: AnnotationExcludeOutboundPorts, reason: `"65536" is not a port`},
		"include cidr bad":           {annotations: capture(AnnotationIncludeOutboundCIDRs, "10.0.0.0"), annotation: AnnotationIncludeOutboundCIDRs, reason: `"10.0.0.0" is not a CIDR`},
		"include cidr empty":         {annotations: capture(AnnotationIncludeOutboundCIDRs, ""), annotation: AnnotationIncludeOutboundCIDRs, reason: "captures nothing"},
		"exclude cidr bad":           {annotations: capture(AnnotationExcludeOutboundCIDRs, "10.0.0.0/33"), annotation: AnnotationExcludeOutboundCIDRs, reason: `"10.0.0.0/33" is not a CIDR`},
		"exclude cidr star":          {annotations: capture(AnnotationExcludeOutboundCIDRs, "*"), annotation: AnnotationExcludeOutboundCIDRs, reason: `"*" is not a CIDR`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, err := injected(t, tc.annotations, tc.edit)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Inject = %v, %v; want a refusal", pod != nil, err)
			}
			if r.Annotation != tc.annotation || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("refusal %q: want one of %s containing %q", r.Error(), tc.annotation, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), tc.annotation+": ") {
				t.Errorf("refusal text %q does not start with the annotation", err.Error())
			}
		})
	}
}

// capture is the annotations of a capture pod with one more annotation.
func capture(annotation, value string) map[string]string {
	return map[string]string{AnnotationCapture: "true", annotation: value}
}
