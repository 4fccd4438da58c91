package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Restarts. A proxy that restarts loses every admin change, so the
// reconcilers that hold a state on proxies (overrides, health checks) look
// for restarts and set their values again. The signals:
//
//   - the start time: /server_info gives the uptime in whole seconds
//     (truncated); read between two clock readings taken right around that
//     very call, it puts the start between before-uptime-1s and
//     after-uptime, whatever the load (a slow answer only widens the
//     window). A proxy certainly restarted when the earliest start of the
//     one answering now is after the latest start on record, with a margin
//     for clocks that disagree (another replica's, or a step of this
//     one's); a restart less than about 3 s after the previous start is
//     not seen this way;
//   - the kubelet's restart count of the proxy container, which a restart
//     raises (no clock involved, and it triggers a reconcile at once);
//   - for a health check set to Fail, the state itself: a proxy answering
//     LIVE no longer fails its health checks.
//
// None of them decides what gets recorded. After a signal the
// override's reconciler reads the values again and records afresh only the
// keys whose value is no longer the one it set: a key still holding the
// override's value keeps its record, so a previous value on record is
// never one the controller set itself, and a signal that was wrong (the
// proxy still holds everything) costs one read and is counted as a false
// restart.

// uptimeGranularity is the precision of /server_info's uptime, which is
// truncated to the second.
const uptimeGranularity = time.Second

// clockTolerance is how far apart the clocks that measured two start times
// may be: those of two replicas of the controller, or this one's before
// and after a step.
const clockTolerance = time.Second

// observedStart is what one /server_info answer says of the proxy's start:
// it lies in [earliest, latest].
type observedStart struct {
	earliest, latest time.Time
}

// observeStart bounds the start of a proxy that answered an uptime between
// the clock readings before and after the call.
func observeStart(before, after time.Time, uptime time.Duration) observedStart {
	return observedStart{earliest: before.Add(-uptime - uptimeGranularity), latest: after.Add(-uptime)}
}

// record is the start as the status keeps it: the latest start, truncated
// to the second as the API stores times (the proxy started before it plus
// one second).
func (s observedStart) record() metav1.Time {
	return metav1.NewTime(s.latest.Truncate(time.Second))
}

// startedAfter reports whether the proxy that answered certainly started
// after the one whose start is on record: its earliest possible start is
// past the recorded one's latest (recorded plus a second, the truncation),
// with clockTolerance to spare.
func (s observedStart) startedAfter(recorded *metav1.Time) bool {
	if recorded == nil {
		return false
	}
	return s.earliest.After(recorded.Add(time.Second + clockTolerance))
}

// proxyRestarts is the kubelet's restart count of the pod's proxy
// container (a container or a native sidecar), 0 when it reports none.
func proxyRestarts(pod *corev1.Pod, container string) int32 {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return s.RestartCount
		}
	}
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == container {
			return s.RestartCount
		}
	}
	return 0
}

// restartSignal tells why a proxy is thought to have restarted since its
// values were set ("" for no reason).
func restartSignal(recordedStart *metav1.Time, recordedRestarts int32, obs *observedStart, restarts int32) string {
	switch {
	case restarts > recordedRestarts:
		return "the kubelet counts a restart of the proxy container"
	case obs != nil && obs.startedAfter(recordedStart):
		return "the proxy's uptime says it started after the values were set"
	}
	return ""
}

// checks remembers when each pod's proxy was last asked for its uptime, so
// that reconciles triggered by events do not ask again before the recheck
// interval. It is only an optimisation: a controller restart forgets it and
// asks once more.
type checks struct {
	mu   sync.Mutex
	last map[checkKey]time.Time
}

// checkKey is one resource's view of one pod.
type checkKey struct {
	resource, pod types.UID
}

func newChecks() *checks { return &checks{last: map[checkKey]time.Time{}} }

// due reports whether the pod's proxy should be asked again.
func (c *checks) due(k checkKey, now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.last[k]
	return !ok || now.Sub(last) >= every
}

// done records a check.
func (c *checks) done(k checkKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[k] = now
}

// forget drops a resource's entries when it goes.
func (c *checks) forget(resource types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.last {
		if k.resource == resource {
			delete(c.last, k)
		}
	}
}
