package controller

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// selectorRef is one resource's name and target, as the pod watch needs
// them.
type selectorRef struct {
	name   string
	target v1alpha1.Target
}

// listSelectors lists a kind's resources of a namespace from the cache.
type listSelectors func(ctx context.Context, c client.Reader, namespace string) ([]selectorRef, error)

// podHandler enqueues the resources whose selector matches a pod's labels,
// before or after a change, so that a pod relabelled out of a selection is
// seen by the resource that selected it.
func podHandler(c client.Reader, list listSelectors) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], pods ...client.Object) {
		var ns string
		for _, p := range pods {
			ns = p.GetNamespace()
		}
		refs, err := list(ctx, c, ns)
		if err != nil {
			return // the cache is not synced yet: the resources' own events follow
		}
		for _, ref := range refs {
			for _, p := range pods {
				if pod, ok := p.(*corev1.Pod); ok && matches(ref.target, pod) {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: ref.name}})
					break
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// podChanged passes the pod events that can change a resource's targets or
// call for a re-apply: creations, deletions, and updates of the labels, the
// phase, the pod IP, the admin-port annotation, container restarts or the
// start of the pod's deletion.
func podChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Pod)
			n, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return !maps.Equal(o.Labels, n.Labels) ||
				o.Status.Phase != n.Status.Phase ||
				o.Status.PodIP != n.Status.PodIP ||
				o.Annotations[v1alpha1.AdminPortAnnotation] != n.Annotations[v1alpha1.AdminPortAnnotation] ||
				restartCount(o) != restartCount(n) ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// specOrDeletion passes a resource's creation, deletion, spec changes and
// the start of its deletion, but not its own status writes (the reconciler
// schedules its own follow-ups).
func specOrDeletion() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// siblings enqueues every resource of the namespace: when one override or
// health check comes, changes or goes, who holds which key on which pod may
// change for the others.
func siblings(c client.Reader, list listSelectors) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		refs, err := list(ctx, c, obj.GetNamespace())
		if err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(refs))
		for _, ref := range refs {
			if ref.name != obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.name}})
			}
		}
		return reqs
	})
}
