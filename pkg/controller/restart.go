package controller

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// restartTolerance absorbs the whole-second precision of the uptime and of
// the stored start time, and the time the call took.
const restartTolerance = 2 * time.Second

// proxyStart is when the proxy started: now less its uptime.
func proxyStart(now time.Time, info adminclient.ServerInfo) metav1.Time {
	return metav1.NewTime(now.Add(-info.Uptime).Truncate(time.Second))
}

// restarted reports whether the proxy that answers now started after the
// one that got the values: a restarted proxy has lost every admin change.
func restarted(recorded *metav1.Time, start metav1.Time) bool {
	return recorded != nil && start.Sub(recorded.Time) > restartTolerance
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
