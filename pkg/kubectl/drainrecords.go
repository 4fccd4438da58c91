package kubectl

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// drainRecord is the latest drain of a pod that a ProxyDrain recorded.
type drainRecord struct {
	drain string
	at    time.Time
	step  v1alpha1.DrainStep
}

// String is "<drain> <age> ago (<step>)".
func (d drainRecord) String(now time.Time) string {
	return fmt.Sprintf("%s %s ago (%s)", d.drain, age(now.Sub(d.at)), d.step)
}

// lastDrains reads the ProxyDrains of namespace ns (all when empty) and
// returns each pod's latest drain: when /drain_listeners succeeded on it,
// or when the drain started on it (health checks failed) if it has not
// got that far.
func (a *app) lastDrains(ctx context.Context, ns string) (map[types.UID]drainRecord, error) {
	list, err := a.kube.dynamic.Resource(v1alpha1.GroupVersion.WithResource("proxydrains")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list proxydrains: %w", err)
	}
	out := map[types.UID]drainRecord{}
	for _, item := range list.Items {
		var d v1alpha1.ProxyDrain
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &d); err != nil {
			return nil, fmt.Errorf("proxydrain %s/%s: %w", item.GetNamespace(), item.GetName(), err)
		}
		for _, t := range d.Status.Targets {
			var at *metav1.Time
			for _, ts := range []*metav1.Time{t.DrainStartedAt, t.DrainRequestedAt, t.HealthChecksFailedAt} {
				if ts != nil {
					at = ts
					break
				}
			}
			if at == nil {
				continue
			}
			if prev, ok := out[t.PodUID]; !ok || at.After(prev.at) {
				out[t.PodUID] = drainRecord{drain: d.Name, at: at.Time, step: t.Step}
			}
		}
	}
	return out, nil
}
