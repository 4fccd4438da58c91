package e2e

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/outrigger-dev/outrigger/pkg/controller/inject"
)

// The command lines the injection webhook gives an injected pod's
// containers, run by the real sidecar binary: every bootstrap the injector
// can choose (default, capture, a ConfigMap's) and every flag its
// annotations set must load, so that a pod the webhook admits never
// crash-loops on its own proxy's arguments.
var _ = Describe("Injected command lines", func() {
	injectedPod := func(annotations map[string]string) *corev1.Pod {
		return injectPod(inject.DefaultConfig(), annotations)
	}
	// validate runs the proxy's arguments in --mode validate.
	validate := func(args []string) {
		r := Run(append(args, "--mode", "validate")...)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	}

	DescribeTable("the proxy's arguments pass --mode validate",
		func(annotations map[string]string) {
			validate(kubeletArgs(injectedPod(annotations), inject.ContainerName))
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
		args := kubeletArgs(injectPod(cfg, map[string]string{inject.AnnotationCapture: "true"}), inject.ContainerName)
		Expect(args).To(ContainElement("--prometheus-naming"))
		Expect(strings.Join(args, " ")).To(ContainSubstring(`address: "::", port_value: 15006`))
		validate(args)
	})

	It("reads a bootstrap ConfigMap's file as mounted", func() {
		pod := injectedPod(map[string]string{inject.AnnotationBootstrapConfigMap: "shop-proxy"})
		args := kubeletArgs(pod, inject.ContainerName)
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
		args := kubeletArgs(injectedPod(map[string]string{
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
