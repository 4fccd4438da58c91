package inject

import (
	"path"
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

// Injected reports whether the webhook already injected the pod: it
// carries AnnotationInjected. Such a pod is never changed, which makes
// Inject idempotent under the API server's reinvocation.
func Injected(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationInjected]
	return ok
}

// Inject adds the proxy to the pod as a native sidecar (and, with capture,
// the init container that installs the capture rules before it), and sets
// the pod's admin-port and Prometheus annotations where absent. It reports
// whether it changed the pod: a pod already injected is left exactly as it
// is. A pod it cannot inject safely is a *Refusal, and the pod is then
// unchanged. It does not look at the injection label (see Wanted).
func Inject(pod *corev1.Pod, cfg Config) (bool, error) {
	if Injected(pod) {
		return false, nil
	}
	opts, r := parseOptions(pod.Annotations, pod.Spec.TerminationGracePeriodSeconds, cfg)
	if r != nil {
		return false, r
	}
	if r := checkPod(pod, opts); r != nil {
		return false, r
	}
	// First among the init containers: a native sidecar starts before the
	// init containers listed after it, and they (like the application)
	// start only once its startup probe passes, so they can use the proxy.
	// The capture rules go in before anything, the proxy included.
	added := []corev1.Container{container(cfg, opts)}
	if opts.capture {
		added = append([]corev1.Container{captureContainer(cfg, opts)}, added...)
	}
	pod.Spec.InitContainers = append(added, pod.Spec.InitContainers...)
	if opts.bootstrapConfigMap != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, bootstrapVolume(opts.bootstrapConfigMap))
	}
	if opts.tlsSecret != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, tlsVolume(opts.tlsSecret))
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationInjected] = "true"
	for k, v := range map[string]string{
		v1alpha1.AdminPortAnnotation: strconv.Itoa(int(opts.adminPort)),
		annotationScrape:             "true",
		annotationPort:               strconv.Itoa(int(cfg.ProbePort)),
		annotationPath:               prometheusPath,
	} {
		// The pod's own values win: it may scrape another container.
		if _, ok := pod.Annotations[k]; !ok {
			pod.Annotations[k] = v
		}
	}
	return true, nil
}

// checkPod refuses the pods whose spec the proxy cannot join: names taken
// by the pod's own containers or volumes, and capture where it would
// change the node's network (host network) or cannot run (Windows).
func checkPod(pod *corev1.Pod, opts podOptions) *Refusal {
	taken := map[string]bool{ContainerName: true}
	if opts.capture {
		taken[CaptureContainerName] = true
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if taken[c.Name] {
				return refuse(InjectLabel, "the pod already has a container named %q; rename it, or opt out with the annotation %s: %q",
					c.Name, InjectLabel, InjectDisabledValue)
			}
		}
	}
	if opts.bootstrapConfigMap != "" {
		for _, v := range pod.Spec.Volumes {
			if v.Name == BootstrapVolume {
				return refuse(AnnotationBootstrapConfigMap, "the pod already has a volume named %q", BootstrapVolume)
			}
		}
	}
	if opts.tlsSecret != "" {
		for _, v := range pod.Spec.Volumes {
			if v.Name == TLSVolume {
				return refuse(AnnotationTLSSecret, "the pod already has a volume named %q", TLSVolume)
			}
		}
	}
	if !opts.capture {
		return nil
	}
	if pod.Spec.HostNetwork {
		return refuse(AnnotationCapture, "the pod uses the host network: its capture rules would redirect the node's traffic")
	}
	if pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows {
		return refuse(AnnotationCapture, "capture needs Linux iptables; the pod's OS is %s", pod.Spec.OS.Name)
	}
	return nil
}

// container is the proxy's init container.
func container(cfg Config, opts podOptions) corev1.Container {
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
	args := []string{"--config-yaml", cfg.bootstrap(opts.adminPort, opts.capture)}
	var mounts []corev1.VolumeMount
	if opts.bootstrapConfigMap != "" {
		// A file rather than --config-yaml: the ConfigMap is the kubelet's
		// to fetch, so the webhook needs no read access to ConfigMaps, and
		// a missing one stops the pod at its volume mount (an event on the
		// pod) instead of starting it with another bootstrap.
		args = []string{"-c", path.Join(BootstrapDir, BootstrapKey)}
		mounts = []corev1.VolumeMount{{Name: BootstrapVolume, MountPath: BootstrapDir, ReadOnly: true}}
	}
	if opts.tlsSecret != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: TLSVolume, MountPath: TLSDir, ReadOnly: true})
	}
	args = append(args,
		// The kubelet expands $(VAR) from the container's env.
		"--service-node", "$(POD_NAME).$(POD_NAMESPACE)",
		"--service-cluster", "$(POD_NAMESPACE)",
		"--termination-drain-time-s", strconv.FormatInt(opts.drainTime, 10),
	)
	if opts.logLevel != "" {
		args = append(args, "--log-level", opts.logLevel)
	}
	if cfg.PrometheusNaming != "" && cfg.PrometheusNaming != "proxy" {
		args = append(args, "--prometheus-naming", cfg.PrometheusNaming)
	}
	return corev1.Container{
		Name:  ContainerName,
		Image: cfg.Image,
		Args:  args,
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		},
		Ports: []corev1.ContainerPort{{
			Name:          ProbePortName,
			ContainerPort: cfg.ProbePort,
			Protocol:      corev1.ProtocolTCP,
		}},
		Resources:    opts.resources(),
		VolumeMounts: mounts,
		// Always turns the init container into a native sidecar: it keeps
		// running beside the application and stops after it.
		RestartPolicy:  ptr.To(corev1.ContainerRestartPolicyAlways),
		StartupProbe:   probe(startupPeriod, startupFailures),
		ReadinessProbe: probe(readinessPeriod, 0),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			// The capture rules recognise the proxy's own traffic by
			// this user and group.
			RunAsUser:              ptr.To[int64](proxyUser),
			RunAsGroup:             ptr.To[int64](proxyUser),
			ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities:           &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// resources are the proxy's requests and limits.
func (o podOptions) resources() corev1.ResourceRequirements {
	list := func(m map[string]resource.Quantity) corev1.ResourceList {
		if len(m) == 0 {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = v
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: list(o.requests), Limits: list(o.limits)}
}

// bootstrapVolume is the volume of a bootstrap ConfigMap. Naming the key
// makes a ConfigMap without it fail the mount, with an event saying so.
func bootstrapVolume(name string) corev1.Volume {
	return corev1.Volume{Name: BootstrapVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
		Items:                []corev1.KeyToPath{{Key: BootstrapKey, Path: BootstrapKey}},
	}}}
}

// tlsVolume is the volume of the certificate Secret name. It is not
// optional: a missing Secret stops the pod at its volume mount, with an
// event, rather than starting a proxy without its certificate. The
// kubelet refreshes the files when the Secret changes (cert-manager's
// renewals).
func tlsVolume(name string) corev1.Volume {
	return corev1.Volume{Name: TLSVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
}
