package controller

import (
	"fmt"
	"sort"
	"sync"

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

// maxPodEvents bounds the pod events of one reason that one reconcile of
// one resource records on the pods themselves. The rest are counted in one
// event on the resource. Events are written one API request each, through
// a queue of 1000 that drops what does not fit: a rollout over hundreds of
// pods would otherwise flood it, and the API server's event rate limits,
// where they are on.
const maxPodEvents = 10

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

// eventBatch gathers the pod events of one reconcile of one resource and
// records them when flushed: each on its pod (related to the resource,
// so that `kubectl events --for pod/<name>` tells what was done to its
// proxy) up to maxPodEvents per reason, and for each reason with more, one
// event on the resource that counts the others and names a few. Failed
// admin calls also go on the resource, as one event per reconcile. It is
// safe for concurrent use: the admin calls of a reconcile run in parallel.
type eventBatch struct {
	e    *env
	kind string
	obj  client.Object

	mu    sync.Mutex
	byKey map[eventKey][]podNote
	order []eventKey
}

// eventKey groups pod events.
type eventKey struct {
	eventType, reason string
}

// podNote is one pod's event.
type podNote struct {
	pod  *corev1.Pod
	note string
}

// newEvents starts the events of one reconcile of obj.
func (e *env) newEvents(kind string, obj client.Object) *eventBatch {
	return &eventBatch{e: e, kind: kind, obj: obj, byKey: map[eventKey][]podNote{}}
}

// pod adds an event on a pod.
func (ev *eventBatch) pod(pod *corev1.Pod, eventType, reason, note string, args ...any) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	k := eventKey{eventType, reason}
	if _, ok := ev.byKey[k]; !ok {
		ev.order = append(ev.order, k)
	}
	ev.byKey[k] = append(ev.byKey[k], podNote{pod: pod, note: fmt.Sprintf(note, args...)})
}

// flush records the events gathered so far.
func (ev *eventBatch) flush() {
	ev.mu.Lock()
	byKey, order := ev.byKey, ev.order
	ev.byKey, ev.order = map[eventKey][]podNote{}, nil
	ev.mu.Unlock()
	for _, k := range order {
		notes := byKey[k]
		sort.SliceStable(notes, func(i, j int) bool { return notes[i].pod.Name < notes[j].pod.Name })
		for _, n := range notes[:min(len(notes), maxPodEvents)] {
			ev.e.recorder.Eventf(n.pod, ev.obj, k.eventType, k.reason, k.reason, "%s", trim(n.note))
		}
		if k.reason == reasonAdminCallFailed {
			// Failures also go on the resource, where they are looked for.
			ev.e.event(ev.obj, nil, k.eventType, k.reason, "admin calls failed on %s: %s", pods(len(notes)), describeNotes(notes))
			continue
		}
		if rest := notes[min(len(notes), maxPodEvents):]; len(rest) > 0 {
			ev.e.opts.Metrics.eventsFolded.WithLabelValues(ev.kind, k.reason).Add(float64(len(rest)))
			ev.e.event(ev.obj, nil, k.eventType, k.reason, "%s on %s more (events on the first %d pods only): %s",
				k.reason, pods(len(rest)), maxPodEvents, describeNotes(rest))
		}
	}
}

// describeNotes names a few pods and their notes: "a: note; b: note; and
// 7 more", with the note said once when all pods share it.
func describeNotes(notes []podNote) string {
	same := true
	for _, n := range notes {
		same = same && n.note == notes[0].note
	}
	items := make([]string, len(notes))
	for i, n := range notes {
		items[i] = n.pod.Name
		if !same {
			items[i] += ": " + n.note
		}
	}
	if same && len(notes) > 0 {
		return notes[0].note + ": " + names(items)
	}
	return names(items)
}
