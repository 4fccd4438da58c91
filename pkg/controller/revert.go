package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// revertFunc undoes a resource's changes on one pod, moving its record to
// Reverted. It reports whether the proxy had restarted since the changes
// were made (they are undone all the same: a restart signal may be wrong).
type revertFunc[P any] func(ctx context.Context, ss *sessions, pod *corev1.Pod, rec P) (restarted bool, err error)

// revertAll undoes the changes on the pods of recs (pods maps their UIDs to
// the pods still there), at most limit at once, and returns the records
// still to do: those that failed and wait for a retry. Records of pods that
// are gone, already reverted, or given up after RevertAttempts failures
// are left out; recs is updated in place. restarted names the pods whose
// proxy had restarted since the changes were made.
func revertAll[T any, P record[T]](ctx context.Context, e *env, kind string, ss *sessions, ev *eventBatch, obj client.Object, recs []T, pods map[types.UID]*corev1.Pod, limit int, w *wake, revert revertFunc[P]) (left []T, restarted []string) {
	now := e.now()
	var todo []int
	for i := range recs {
		t := P(&recs[i]).Common()
		switch {
		case t.Phase == v1alpha1.PhaseReverted:
		case pods[t.PodUID] == nil:
			e.opts.Metrics.revertSkipped.WithLabelValues(kind, "pod_gone").Inc()
		case t.Phase == v1alpha1.PhaseFailed && now.Time.Before(e.retryAt(t)):
			w.add(e.retryAt(t))
		default:
			todo = append(todo, i)
		}
	}
	abandoned := make([]bool, len(recs))
	wasRestarted := make([]bool, len(recs))
	parallel(ctx, limit, todo, func(ctx context.Context, i int) {
		rec := P(&recs[i])
		t := rec.Common()
		pod := pods[t.PodUID]
		again, err := revert(ctx, ss, pod, rec)
		if err != nil {
			ss.drop(t.PodUID)
			setFailed(t, fmt.Errorf("undo: %w", err), e.now())
			if t.Attempts >= e.opts.RevertAttempts {
				abandoned[i] = true
				e.opts.Metrics.revertSkipped.WithLabelValues(kind, "abandoned").Inc()
				ev.pod(pod, corev1.EventTypeWarning, reasonRevertAbandoned, "gave up undoing the changes after %d attempts: %s", t.Attempts, err)
				return
			}
			w.add(e.retryAt(t))
			return
		}
		result := "restored"
		if again {
			result = "restarted"
			wasRestarted[i] = true
			ev.pod(pod, corev1.EventTypeWarning, reasonProxyRestarted, "the proxy had restarted since the changes were made; undone all the same")
		}
		e.opts.Metrics.reverts.WithLabelValues(kind, result).Inc()
		ev.pod(pod, corev1.EventTypeNormal, reasonReverted, "%s", t.Message)
	})
	for i := range recs {
		t := P(&recs[i]).Common()
		if wasRestarted[i] {
			restarted = append(restarted, t.PodName)
		}
		if pods[t.PodUID] != nil && t.Phase != v1alpha1.PhaseReverted && !abandoned[i] {
			left = append(left, recs[i])
		}
	}
	return left, restarted
}

// revertOnDelete carries out onDelete Revert for obj, being deleted: it
// undoes the changes on the pods of *recs (obj's status entries), then lets
// obj go. While some pods wait for a retry, *recs keeps only those and the
// status st reports them, s filled in with what is left.
func revertOnDelete[T any, P record[T]](ctx context.Context, e *env, kind string, obj client.Object, recs *[]T, st *v1alpha1.CommonStatus, limit int, revert revertFunc[P], s summary, done string) (ctrl.Result, error) {
	live, err := livePods[T, P](ctx, e.client, obj.GetNamespace(), *recs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// revertAll updates the entries in place: the base is taken before.
	base := obj.DeepCopyObject().(client.Object)
	ss := e.newSessions()
	defer ss.close()
	ev := e.newEvents(kind, obj)
	defer ev.flush()
	var w wake
	left, restarted := revertAll(ctx, e, kind, ss, ev, obj, *recs, live, limit, &w, revert)
	if len(restarted) > 0 {
		done += fmt.Sprintf(" (on %s the proxy had restarted since the changes were made: %s)", pods(len(restarted)), names(restarted))
	}
	if len(left) == 0 {
		e.opts.Metrics.setTargets(kind, client.ObjectKeyFromObject(obj), nil)
		e.event(obj, nil, corev1.EventTypeNormal, reasonReverted, "%s", done)
		return ctrl.Result{}, e.removeFinalizer(ctx, obj)
	}
	*recs = left
	s.deleting, s.selected, s.targets = true, len(left), commons[T, P](left)
	s.apply(st)
	e.opts.Metrics.setTargets(kind, client.ObjectKeyFromObject(obj), s.targets)
	if err := e.patchStatus(ctx, kind, obj, base); err != nil {
		return ctrl.Result{}, err
	}
	return w.result(e.clock.Now()), nil
}

// livePods finds the pods of records that still exist (same name and UID).
func livePods[T any, P record[T]](ctx context.Context, c client.Reader, namespace string, recs []T) (map[types.UID]*corev1.Pod, error) {
	pods := map[types.UID]*corev1.Pod{}
	for i := range recs {
		t := P(&recs[i]).Common()
		p, err := livePod(ctx, c, namespace, t.PodName, t.PodUID, selection{})
		if err != nil {
			return nil, err
		}
		if p != nil {
			pods[t.PodUID] = p
		}
	}
	return pods, nil
}

// selectorObj is another resource of the same kind and its target.
type selectorObj struct {
	obj    metav1.Object
	target v1alpha1.Target
}

// holderOf names the resource among others (all older than the caller)
// that holds the pod: the oldest whose selector matches it, or "".
func holderOf(others []selectorObj, pod *corev1.Pod) string {
	var holder metav1.Object
	for _, o := range others {
		if !matches(o.target, pod) {
			continue
		}
		if holder == nil || holdsBefore(o.obj, holder) {
			holder = o.obj
		}
	}
	if holder == nil {
		return ""
	}
	return holder.GetName()
}
