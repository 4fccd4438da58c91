package inject

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// The injected proxy's fixed user and resource requests.
const (
	// proxyUser is the distroless "nonroot" user: the proxy needs no
	// privilege, and a numeric id lets runAsNonRoot be checked by the
	// kubelet without reading the image.
	proxyUser = 65532
	// Startup probe: checked every second for up to two minutes, so that
	// the application's containers start as soon as the proxy is LIVE and
	// a proxy that never gets there is restarted.
	startupPeriod   = 1
	startupFailures = 120
	readinessPeriod = 5
	requestCPU      = "50m"
	requestMemory   = "64Mi"
	readyPath       = "/ready"
)

// Wanted reports whether the pod asks for a proxy: it carries the injection
// label with the value "true".
func Wanted(pod *corev1.Pod) bool {
	return pod.Labels[InjectLabel] == InjectLabelValue
}

// Injected reports whether the pod already has a container or an init
// container named like the proxy. Such a pod is never changed, which makes
// Inject idempotent under the API server's reinvocation and leaves pods
// that bring their own proxy alone.
func Injected(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == ContainerName {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ContainerName {
			return true
		}
	}
	return false
}

// Inject adds the proxy to the pod as a native sidecar and sets the pod's
// admin-port and Prometheus annotations where absent. It reports whether it
// changed the pod: a pod that already has a "proxy" container is left
// exactly as it is. It does not look at the injection label (see Wanted).
func Inject(pod *corev1.Pod, cfg Config) bool {
	if Injected(pod) {
		return false
	}
	// First among the init containers: a native sidecar starts before the
	// init containers listed after it, and they (like the application)
	// start only once its startup probe passes, so they can use the proxy.
	pod.Spec.InitContainers = append([]corev1.Container{container(cfg)}, pod.Spec.InitContainers...)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range map[string]string{
		v1alpha1.AdminPortAnnotation: strconv.Itoa(int(cfg.AdminPort)),
		annotationScrape:             "true",
		annotationPort:               strconv.Itoa(int(cfg.ProbePort)),
		annotationPath:               prometheusPath,
	} {
		// The pod's own values win: it may scrape another container or
		// run a proxy image whose admin port differs.
		if _, ok := pod.Annotations[k]; !ok {
			pod.Annotations[k] = v
		}
	}
	return true
}

// container is the proxy's init container.
func container(cfg Config) corev1.Container {
	probe := func(period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: readyPath,
				Port: intstr.FromString(ProbePortName),
			}},
			PeriodSeconds:    period,
			FailureThreshold: failures,
		}
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: path},
		}}
	}
	return corev1.Container{
		Name:  ContainerName,
		Image: cfg.Image,
		Args: []string{
			"--config-yaml", cfg.bootstrap(),
			// The kubelet expands $(VAR) from the container's env.
			"--service-node", "$(POD_NAME).$(POD_NAMESPACE)",
			"--service-cluster", "$(POD_NAMESPACE)",
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		},
		Ports: []corev1.ContainerPort{{
			Name:          ProbePortName,
			ContainerPort: cfg.ProbePort,
			Protocol:      corev1.ProtocolTCP,
		}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(requestCPU),
			corev1.ResourceMemory: resource.MustParse(requestMemory),
		}},
		// Always turns the init container into a native sidecar: it keeps
		// running beside the application and stops after it.
		RestartPolicy:  ptr.To(corev1.ContainerRestartPolicyAlways),
		StartupProbe:   probe(startupPeriod, startupFailures),
		ReadinessProbe: probe(readinessPeriod, 0),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](proxyUser),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}
