package healthcheck

import (
	"sync"
	"time"
)

// responseCache is cache_time's memory of the last passed-through health
// check response, as Envoy's HealthCheckCacheManager: a timer clears it
// every cache_time from the filter's creation, so the first health check
// of each period goes to the upstream and the others of that period are
// answered with its status.
type responseCache struct {
	period time.Duration
	start  time.Time
	now    func() time.Time

	mu       sync.Mutex
	filled   bool
	setIn    int64 // the period of the last response
	status   int
	degraded bool
}

func newResponseCache(period time.Duration, now func() time.Time) *responseCache {
	return &responseCache{period: period, start: now(), now: now}
}

// current is the number of the period now is in.
func (c *responseCache) current() int64 {
	return int64(c.now().Sub(c.start) / c.period)
}

// get returns the cached status when a response came in this period.
func (c *responseCache) get() (status int, degraded, ok bool) {
	p := c.current()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.filled || c.setIn != p {
		return 0, false, false
	}
	return c.status, c.degraded, true
}

// set records a passed-through response.
func (c *responseCache) set(status int, degraded bool) {
	p := c.current()
	c.mu.Lock()
	c.filled, c.setIn, c.status, c.degraded = true, p, status, degraded
	c.mu.Unlock()
}
