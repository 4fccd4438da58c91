package controller

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// summary is what the conditions are computed from, beyond the records.
type summary struct {
	generation int64
	// phases are the records' phases, messages and pod names.
	targets []*v1alpha1.TargetStatus
	// selected counts the target pods, overflow included.
	selected int
	overflow int
	// invalid names pods whose admin endpoint cannot be worked out.
	invalid []string
	// container is the proxy container's name, for the NoTargets message.
	container string
	// succeeded names the success phase in messages: "applied", "drained".
	succeeded string
	// deleting and expired describe the resource's own state.
	deleting, expired bool
	// conflict, when the kind has the condition, is its message ("" for
	// none); hasConflict says whether to report the condition at all.
	hasConflict bool
	conflict    string
}

// maxNamed bounds how many pods a condition message names.
const maxNamed = 3

// apply sets the counters and the conditions of st.
func (s summary) apply(st *v1alpha1.CommonStatus) {
	st.ObservedGeneration = s.generation
	c := v1alpha1.Counters{Selected: int32(s.selected)}
	var failed, busy []string
	for _, t := range s.targets {
		switch t.Phase {
		case v1alpha1.PhasePending:
			c.Pending++
			busy = append(busy, t.PodName)
		case v1alpha1.PhaseInProgress:
			c.InProgress++
			busy = append(busy, t.PodName)
		case v1alpha1.PhaseApplied, v1alpha1.PhaseDrained:
			c.Succeeded++
		case v1alpha1.PhaseFailed:
			c.Failed++
			failed = append(failed, t.PodName+": "+t.Message)
		}
	}
	st.Counters = c

	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}
	switch {
	case s.deleting:
		ready.Reason, ready.Message = v1alpha1.ReasonDeleting, "being deleted"
	case s.expired:
		ready.Reason, ready.Message = v1alpha1.ReasonExpired, "the ttl has ended; the values were removed"
	case s.selected == 0:
		ready.Reason = v1alpha1.ReasonNoTargets
		ready.Message = fmt.Sprintf("no running pod with a pod IP and a container %q matches the selector", s.container)
	case c.Failed > 0:
		ready.Reason = v1alpha1.ReasonTargetsFailed
		ready.Message = fmt.Sprintf("%d of %s failed", c.Failed, pods(s.selected))
	case s.overflow > 0:
		ready.Reason = v1alpha1.ReasonTooManyTargets
		ready.Message = fmt.Sprintf("%d of %s are beyond the %d tracked", s.overflow, pods(s.selected), v1alpha1.MaxTargets)
	case c.Pending+c.InProgress > 0:
		ready.Reason = v1alpha1.ReasonInProgress
		ready.Message = fmt.Sprintf("%d of %s %s", c.Succeeded, pods(s.selected), s.succeeded)
	default:
		ready.Status, ready.Reason = metav1.ConditionTrue, v1alpha1.ReasonSucceeded
		ready.Message = fmt.Sprintf("%d of %s %s", c.Succeeded, pods(s.selected), s.succeeded)
	}

	progressing := metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonRolloutComplete, Message: "no admin call left to make"}
	switch {
	case s.deleting || s.expired:
		var left []string
		for _, t := range s.targets {
			if t.Phase != v1alpha1.PhaseReverted {
				left = append(left, t.PodName)
			}
		}
		if len(left) > 0 {
			progressing.Status, progressing.Reason = metav1.ConditionTrue, v1alpha1.ReasonReverting
			progressing.Message = "undoing the changes on " + names(left)
		}
	case len(busy)+len(failed) > 0:
		progressing.Status, progressing.Reason = metav1.ConditionTrue, v1alpha1.ReasonRolloutInProgress
		progressing.Message = fmt.Sprintf("%d pending, %d in progress, %d retrying", c.Pending, c.InProgress, c.Failed)
	}

	degraded := metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonAsExpected, Message: "every admin call succeeded"}
	switch {
	case len(s.invalid) > 0:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, v1alpha1.ReasonInvalidTarget
		degraded.Message = "cannot work out the admin endpoint of " + names(s.invalid)
	case len(failed) > 0:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, v1alpha1.ReasonAdminCallFailed
		degraded.Message = names(failed) + " (retried with backoff)"
	case s.overflow > 0:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, v1alpha1.ReasonTooManyTargets
		degraded.Message = fmt.Sprintf("the selector matches %d pods; only the first %d are tracked and acted on", s.selected, v1alpha1.MaxTargets)
	}

	for _, cond := range []metav1.Condition{ready, progressing, degraded} {
		cond.ObservedGeneration = s.generation
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	if s.hasConflict {
		conflict := metav1.Condition{Type: v1alpha1.ConditionConflict, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonNoConflict, Message: "no older resource holds a key this one sets", ObservedGeneration: s.generation}
		if s.conflict != "" {
			conflict.Status, conflict.Reason, conflict.Message = metav1.ConditionTrue, v1alpha1.ReasonKeyConflict, s.conflict
		}
		meta.SetStatusCondition(&st.Conditions, conflict)
	}
}

// pods counts pods in words: "1 pod", "2 pods".
func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// names joins at most maxNamed items, and says how many more there are.
func names(items []string) string {
	if len(items) <= maxNamed {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:maxNamed], "; "), len(items)-maxNamed)
}
