package controller

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// selection is the target pods of a resource, in pod name order.
type selection struct {
	// pods are the target pods: running, with a pod IP and the proxy
	// container, matching the selector.
	pods []corev1.Pod
	// byUID indexes every pod of the namespace that matches the selector,
	// target or not, so that a record of a pod that stopped being a target
	// can tell "gone" from "still there".
	byUID map[types.UID]*corev1.Pod
}

// selectTargets lists the resource's target pods from the cache.
func selectTargets(ctx context.Context, c client.Reader, namespace string, t v1alpha1.Target) (selection, error) {
	sel, err := metav1.LabelSelectorAsSelector(&t.PodSelector)
	if err != nil {
		return selection{}, fmt.Errorf("spec.target.podSelector: %w", err)
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return selection{}, fmt.Errorf("list pods: %w", err)
	}
	s := selection{byUID: make(map[types.UID]*corev1.Pod, len(list.Items))}
	for i := range list.Items {
		p := &list.Items[i]
		s.byUID[p.UID] = p
		if isTarget(p, containerName(t)) {
			s.pods = append(s.pods, *p)
		}
	}
	sort.Slice(s.pods, func(i, j int) bool { return s.pods[i].Name < s.pods[j].Name })
	return s, nil
}

// containerName is the proxy container's name.
func containerName(t v1alpha1.Target) string {
	if t.Container == "" {
		return v1alpha1.DefaultProxyContainer
	}
	return t.Container
}

// isTarget reports whether a pod's proxy can be acted on: the pod runs, has
// an IP, and has the proxy container, as an ordinary container or as a
// native sidecar (an init container that restarts always).
func isTarget(p *corev1.Pod, container string) bool {
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return false
	}
	return adminclient.HasContainer(p, container)
}

// matches reports whether a resource's selector selects the pod's labels.
func matches(t v1alpha1.Target, pod *corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(&t.PodSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(pod.Labels))
}

// endpointFor is the admin endpoint of a pod's proxy. The port comes from
// the pod's proxy.outrigger.dev/admin-port annotation, else 9901.
func endpointFor(p *corev1.Pod) (adminclient.Endpoint, error) {
	return adminclient.PodEndpoint(p)
}

// restartCount sums the restarts of the pod's containers, so that a pod
// event fires when the proxy container restarts.
func restartCount(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	for _, s := range p.Status.InitContainerStatuses {
		n += s.RestartCount
	}
	return n
}
