package inject

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// testConfig has a short bootstrap, so that the golden pods stay readable;
// the default bootstrap has its own golden file.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Bootstrap = "admin: {}\n"
	return cfg
}

// appPod is a labelled pod with an application container and an init
// container of its own.
func appPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app", Namespace: "shop",
			Labels: map[string]string{InjectLabel: InjectLabelValue, "app": "shop"},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "shop-migrate"}},
			Containers:     []corev1.Container{{Name: "shop", Image: "shop"}},
		},
	}
}

// TestInject checks the injected pod against golden files.
func TestInject(t *testing.T) {
	cases := map[string]struct {
		pod     func() *corev1.Pod
		cfg     Config
		changed bool
	}{
		"labelled pod": {pod: appPod, cfg: testConfig(), changed: true},
		"custom ports and image": {
			pod:     appPod,
			cfg:     Config{Image: "registry.local/outrigger:v1", Bootstrap: "admin: {}\n", AdminPort: 15000, ProbePort: 15021},
			changed: true,
		},
		"existing annotations kept": {
			pod: func() *corev1.Pod {
				p := appPod()
				p.Annotations = map[string]string{
					"proxy.outrigger.dev/admin-port": "19000",
					"prometheus.io/port":             "8080",
					"prometheus.io/path":             "/metrics",
					"team":                           "shop",
				}
				return p
			},
			cfg:     testConfig(),
			changed: true,
		},
		"capture": {
			pod: func() *corev1.Pod {
				p := appPod()
				p.Annotations = map[string]string{
					AnnotationCapture:              "true",
					AnnotationExcludeInboundPorts:  "8081,9902",
					AnnotationExcludeOutboundPorts: "5432",
					AnnotationExcludeOutboundCIDRs: "169.254.169.254/32",
				}
				return p
			},
			cfg:     testConfig(),
			changed: true,
		},
		"bootstrap configmap and controls": {
			pod: func() *corev1.Pod {
				p := appPod()
				p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
				p.Annotations = map[string]string{
					AnnotationBootstrapConfigMap: "shop-proxy",
					AnnotationProxyCPU:           "200m",
					AnnotationProxyMemoryLimit:   "256Mi",
					AnnotationLogLevel:           "debug",
					AnnotationDrainTime:          "20",
				}
				return p
			},
			cfg:     testConfig(),
			changed: true,
		},
		"envoy naming": {
			pod:     appPod,
			cfg:     Config{Image: DefaultImage, AdminPort: 9901, ProbePort: 9902, PrometheusNaming: "envoy"},
			changed: true,
		},
		"default bootstrap": {
			pod: func() *corev1.Pod {
				return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
			},
			cfg:     DefaultConfig(),
			changed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := tc.pod()
			before := pod.DeepCopy()
			got, err := Inject(pod, tc.cfg)
			if err != nil || got != tc.changed {
				t.Fatalf("Inject = %v, %v; want %v", got, err, tc.changed)
			}
			if !tc.changed {
				if diff := cmp.Diff(before, pod); diff != "" {
					t.Fatalf("Inject reported no change but changed the pod (-before +after):\n%s", diff)
				}
				return
			}
			// A second pass (the API server's reinvocation) changes nothing.
			again := pod.DeepCopy()
			if changed, err := Inject(again, tc.cfg); changed || err != nil {
				t.Errorf("a second Inject = %v, %v; want no change", changed, err)
			}
			if diff := cmp.Diff(pod, again); diff != "" {
				t.Errorf("a second Inject changed the pod (-first +second):\n%s", diff)
			}
			out, err := yaml.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "pod-"+slug(name)+".yaml"), out)
		})
	}
}

// TestInjectNativeSidecar checks the contract's essentials directly, so
// that a golden file refreshed by mistake cannot hide their loss.
func TestInjectNativeSidecar(t *testing.T) {
	pod := appPod()
	cfg := DefaultConfig()
	if changed, err := Inject(pod, cfg); !changed || err != nil {
		t.Fatalf("Inject = %v, %v; want a change", changed, err)
	}
	if n := len(pod.Spec.InitContainers); n != 2 || pod.Spec.InitContainers[1].Name != "migrate" {
		t.Fatalf("init containers %v: want the proxy first, then migrate", names(pod.Spec.InitContainers))
	}
	c := pod.Spec.InitContainers[0]
	if c.Name != "proxy" || c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("container %q restartPolicy %v: want proxy with Always", c.Name, c.RestartPolicy)
	}
	wantArgs := []string{"--config-yaml", DefaultBootstrap(9901, 9902),
		"--service-node", "$(POD_NAME).$(POD_NAMESPACE)", "--service-cluster", "$(POD_NAMESPACE)",
		"--termination-drain-time-s", "5"}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" || p.HTTPGet.Port.StrVal != "proxy-probe" {
			t.Errorf("probe %+v: want httpGet /ready on proxy-probe", p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9902 || c.Ports[0].Name != "proxy-probe" {
		t.Errorf("ports %+v: want 9902 named proxy-probe", c.Ports)
	}
	want := map[string]string{
		"proxy.outrigger.dev/admin-port": "9901",
		"prometheus.io/scrape":           "true",
		"prometheus.io/port":             "9902",
		"prometheus.io/path":             "/stats/prometheus",
		"proxy.outrigger.dev/injected":   "true",
	}
	if diff := cmp.Diff(want, pod.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// names lists containers' names.
func names(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// slug turns a case name into a file name.
func slug(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == ' ' {
			b[i] = '-'
		}
	}
	return string(b)
}
