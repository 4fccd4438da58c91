package e2e

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

// The command lines the injection webhook gives an injected pod's
// containers, run by the real sidecar binary: every bootstrap the injector
// can choose (default, capture, a ConfigMap's) and every flag its
// annotations set must load, so that a pod the webhook admits never
// crash-loops on its own proxy's arguments.
var _ = Describe("Injected command lines", func() {
	// injectedPodWith injects a pod with the annotations under cfg and
	// returns it.
	injectedPodWith := func(cfg inject.Config, annotations map[string]string) *corev1.Pod {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "app-1", Namespace: "shop", Annotations: annotations,
				Labels: map[string]string{inject.InjectLabel: inject.InjectLabelValue},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
		changed, err := inject.Inject(pod, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(changed).To(BeTrue())
		return pod
	}
	injectedPod := func(annotations map[string]string) *corev1.Pod {
		return injectedPodWith(inject.DefaultConfig(), annotations)
	}
	// containerArgs returns a container's arguments as the kubelet passes
	// them: $(VAR) expanded from the pod's fields.
	containerArgs := func(pod *corev1.Pod, name string) []string {
		for _, c := range pod.Spec.InitContainers {
			if c.Name != name {
				continue
			}
			args := make([]string, len(c.Args))
			for i, a := range c.Args {
				args[i] = strings.NewReplacer("$(POD_NAME)", pod.Name, "$(POD_NAMESPACE)", pod.Namespace).Replace(a)
			}
			return args
		}
		Fail("no container " + name)
		return nil
	}
	// validate runs the proxy's arguments in --mode validate.
	validate := func(args []string) {
		r := Run(append(args, "--mode", "validate")...)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	}

	DescribeTable("the proxy's arguments pass --mode validate",
		func(annotations map[string]string) {
			validate(containerArgs(injectedPod(annotations), inject.ContainerName))
		},
		Entry("default bootstrap", nil),
		Entry("log level, drain time, resources", map[string]string{
			inject.AnnotationLogLevel: "warn", inject.AnnotationDrainTime: "12",
			inject.AnnotationProxyCPU: "100m", inject.AnnotationProxyMemoryLimit: "256Mi",
		}),
		Entry("capture bootstrap", map[string]string{inject.AnnotationCapture: "true"}),
		Entry("capture bootstrap, admin port moved", map[string]string{
			inject.AnnotationCapture: "true", "proxy.outrigger.dev/admin-port": "15000",
		}),
	)

	It("passes the controller's naming and dual-stack choices", func() {
		cfg := inject.DefaultConfig()
		cfg.PrometheusNaming, cfg.CaptureIPv6 = "envoy", true
		args := containerArgs(injectedPodWith(cfg, map[string]string{inject.AnnotationCapture: "true"}), inject.ContainerName)
		Expect(args).To(ContainElement("--prometheus-naming"))
		Expect(strings.Join(args, " ")).To(ContainSubstring(`address: "::", port_value: 15006`))
		validate(args)
	})

	It("reads a bootstrap ConfigMap's file as mounted", func() {
		pod := injectedPod(map[string]string{inject.AnnotationBootstrapConfigMap: "shop-proxy"})
		args := containerArgs(pod, inject.ContainerName)
		mounted := filepath.Join(inject.BootstrapDir, inject.BootstrapKey)
		Expect(args).To(ContainElement(mounted))
		// The ConfigMap's content: the explicit mode's bootstrap, the
		// default admin and probe listener plus the user's own.
		file := filepath.Join(newDir(), inject.BootstrapKey)
		Expect(os.WriteFile(file, []byte(inject.DefaultBootstrap(9901, 9902)), 0o600)).To(Succeed())
		for i, a := range args {
			if a == mounted {
				args[i] = file
			}
		}
		validate(args)
	})

	It("installs nothing with the capture container's arguments and --dry-run", func() {
		args := containerArgs(injectedPod(map[string]string{
			inject.AnnotationCapture: "true", inject.AnnotationExcludeOutboundPorts: "5432",
			inject.AnnotationExcludeOutboundCIDRs: "169.254.169.254/32",
		}), inject.CaptureContainerName)
		Expect(args[0]).To(Equal("capture"))
		r := Run(append(args, "--dry-run")...)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
		Expect(r.Stdout).To(ContainSubstring("15001"))
		Expect(r.Stdout).To(ContainSubstring("15006"))
	})
})
