package controller

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// record is a kind's per-pod status entry.
type record[T any] interface {
	*T
	Common() *v1alpha1.TargetStatus
}

// merged is a resource's records matched with its target pods.
type merged[T any] struct {
	// targets has one record per target pod (new pods get a Pending one),
	// sorted by pod name, at most MaxTargets.
	targets []T
	// pods holds the pod of each record in targets, by pod UID.
	pods map[types.UID]*corev1.Pod
	// released are the records of pods that still exist but are no longer
	// targets (relabelled, stopped); each kind decides what they need.
	released []T
	// releasedPods holds the pod of each released record, by pod UID.
	releasedPods map[types.UID]*corev1.Pod
	// overflow counts the target pods beyond MaxTargets, left alone.
	overflow int
}

// mergeTargets matches records (by pod UID) with the selected pods. Pods
// that already have a record keep their place under the cap before new
// ones are added, so the cap never makes the controller forget what it did
// to a pod. Records of pods that no longer exist are dropped.
func mergeTargets[T any, P record[T]](ctx context.Context, c client.Reader, namespace string, records []T, sel selection, now metav1.Time) (merged[T], error) {
	m := merged[T]{pods: map[types.UID]*corev1.Pod{}, releasedPods: map[types.UID]*corev1.Pod{}}
	existing := make(map[types.UID]int, len(records))
	for i := range records {
		existing[P(&records[i]).Common().PodUID] = i
	}
	var fresh []*corev1.Pod
	for i := range sel.pods {
		p := &sel.pods[i]
		idx, ok := existing[p.UID]
		if !ok {
			fresh = append(fresh, p)
			continue
		}
		rec := records[idx]
		P(&rec).Common().PodName = p.Name
		m.targets = append(m.targets, rec)
		m.pods[p.UID] = p
		delete(existing, p.UID)
	}
	for _, p := range fresh {
		if len(m.targets) >= v1alpha1.MaxTargets {
			m.overflow++
			continue
		}
		var rec T
		*P(&rec).Common() = v1alpha1.TargetStatus{PodName: p.Name, PodUID: p.UID, Phase: v1alpha1.PhasePending, LastTransitionTime: now}
		m.targets = append(m.targets, rec)
		m.pods[p.UID] = p
	}
	sortRecords[T, P](m.targets)

	// What remains in existing are records of pods that are not targets now.
	for uid, idx := range existing {
		rec := records[idx]
		pod, err := livePod(ctx, c, namespace, P(&rec).Common().PodName, uid, sel)
		if err != nil {
			return merged[T]{}, err
		}
		if pod == nil {
			continue // gone
		}
		m.released = append(m.released, rec)
		m.releasedPods[uid] = pod
	}
	sortRecords[T, P](m.released)
	return m, nil
}

// livePod finds the pod of a record, or nil if it is gone (deleted, or
// recreated under the same name with another UID).
func livePod(ctx context.Context, c client.Reader, namespace, name string, uid types.UID, sel selection) (*corev1.Pod, error) {
	if p, ok := sel.byUID[uid]; ok {
		return p, nil
	}
	var p corev1.Pod
	switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case p.UID != uid:
		return nil, nil
	}
	return &p, nil
}

// sortRecords orders records by pod name, then UID.
func sortRecords[T any, P record[T]](recs []T) {
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := P(&recs[i]).Common(), P(&recs[j]).Common()
		if a.PodName != b.PodName {
			return a.PodName < b.PodName
		}
		return a.PodUID < b.PodUID
	})
}

// commons lists the records' shared parts, for the summary.
func commons[T any, P record[T]](recs []T) []*v1alpha1.TargetStatus {
	out := make([]*v1alpha1.TargetStatus, len(recs))
	for i := range recs {
		out[i] = P(&recs[i]).Common()
	}
	return out
}

// setPhase moves a record to phase with message, stamping the transition
// time when the phase changes. Success clears the failure count.
func setPhase(t *v1alpha1.TargetStatus, phase v1alpha1.TargetPhase, message string, now metav1.Time) {
	if t.Phase != phase {
		t.LastTransitionTime = now
	}
	t.Phase = phase
	t.Message = message
	if phase != v1alpha1.PhaseFailed {
		t.Attempts = 0
		t.LastAttemptTime = nil
	}
}

// setFailed records a failed admin call: the phase turns Failed, the
// attempt is counted for the backoff, and the error becomes the message.
func setFailed(t *v1alpha1.TargetStatus, err error, now metav1.Time) {
	if t.Phase != v1alpha1.PhaseFailed {
		t.LastTransitionTime = now
	}
	t.Phase = v1alpha1.PhaseFailed
	t.Attempts++
	t.LastAttemptTime = &now
	t.Message = err.Error()
}
