package overload

import "time"

// DefaultShrinkHeapInterval is how often shrink_heap runs while saturated
// when its ShrinkHeapConfig gives no timer_interval (Envoy's 10 s).
const DefaultShrinkHeapInterval = 10 * time.Second

// shrinkLoop is envoy.overload_actions.shrink_heap: every interval, while
// the action is saturated, free memory goes back to the operating system
// (the Go runtime forces a collection and releases what it can) and
// overload.<action>.shrink_count counts it.
func (m *Manager) shrinkLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.clock.After(m.shrinkInterval):
			m.shrinkOnce()
		case <-m.stopCh:
			return
		}
	}
}

// shrinkOnce is one tick of the shrink_heap loop.
func (m *Manager) shrinkOnce() {
	if m.state(shrinkHeap) >= 1 {
		m.freeOSMemory()
		m.shrinkCount.Inc()
	}
}
