package adminclient

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// HasContainer reports whether the pod runs a container named name, as an
// ordinary container or as a native sidecar (an init container that
// restarts always): where an injected proxy runs.
func HasContainer(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}

// PodEndpoint is the admin endpoint of a pod's proxy. The port comes from
// the pod's proxy.outrigger.dev/admin-port annotation, else 9901.
func PodEndpoint(p *corev1.Pod) (Endpoint, error) {
	e := Endpoint{Namespace: p.Namespace, Pod: p.Name, UID: p.UID, IP: p.Status.PodIP, Port: v1alpha1.DefaultAdminPort}
	if v, ok := p.Annotations[v1alpha1.AdminPortAnnotation]; ok {
		port, err := strconv.ParseUint(v, 10, 16)
		if err != nil || port == 0 {
			return e, fmt.Errorf("annotation %s: %q is not a port number (1-65535)", v1alpha1.AdminPortAnnotation, v)
		}
		e.Port = int32(port)
	}
	return e, nil
}
