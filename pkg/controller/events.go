package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event reasons.
const (
	reasonApplied         = "Applied"
	reasonReverted        = "Reverted"
	reasonDrainStarted    = "DrainStarted"
	reasonDrained         = "Drained"
	reasonHealthCheckSet  = "HealthCheckSet"
	reasonAdminCallFailed = "AdminCallFailed"
	reasonProxyRestarted  = "ProxyRestarted"
	reasonRevertAbandoned = "RevertAbandoned"
	reasonConflict        = "Conflict"
	reasonExpired         = "Expired"
	reasonRolloutComplete = "RolloutComplete"
)

// maxNote is the longest note the events API accepts.
const maxNote = 1024

// podEvent records an event on the pod, related to the resource, so that
// `kubectl events --for pod/<name>` tells what was done to its proxy.
func (e *env) podEvent(pod *corev1.Pod, obj client.Object, eventType, reason, note string, args ...any) {
	e.recorder.Eventf(pod, obj, eventType, reason, reason, "%s", trim(fmt.Sprintf(note, args...)))
}

// event records an event on the resource, related to a pod when pod is
// not nil.
func (e *env) event(obj client.Object, pod *corev1.Pod, eventType, reason, note string, args ...any) {
	// A nil *Pod in the interface would not read as "no related object".
	var related runtime.Object
	if pod != nil {
		related = pod
	}
	e.recorder.Eventf(obj, related, eventType, reason, reason, "%s", trim(fmt.Sprintf(note, args...)))
}

// trim cuts a note to the events API's limit.
func trim(s string) string {
	if len(s) <= maxNote {
		return s
	}
	return s[:maxNote-3] + "..."
}
