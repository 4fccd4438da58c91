package overload

import (
	"io"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// DefaultRefreshInterval is refresh_interval when the configuration leaves
// it out (Envoy's 1 s).
const DefaultRefreshInterval = time.Second

// Deps is what a Manager needs from the server that builds it.
type Deps struct {
	// Stats is the server's stat store (required).
	Stats *stats.Store
	// Log is the "main" component logger.
	Log logr.Logger
	// Runtime holds the overload.global_downstream_max_connections key;
	// nil means no runtime.
	Runtime *runtime.Runtime
	// Clock drives the refresh and shrink_heap loops; nil means the system
	// clock.
	Clock Clock
	// HeapInUse measures the heap for the fixed_heap monitor; nil means
	// HeapInUse.
	HeapInUse func() uint64
	// HostRoot is the directory standing for "/" where the cgroup_memory
	// and cpu_utilization monitors read /proc and /sys/fs/cgroup; "" means
	// "/". Tests point it at files they write.
	HostRoot string
	// FreeOSMemory is what shrink_heap runs; nil means debug.FreeOSMemory.
	FreeOSMemory func()
	// Rand draws a number in [0, 1) for the actions that apply to a share
	// of connections or requests; nil means math/rand/v2's Float64.
	Rand func() float64
}

// Manager is the overload manager: its monitors, actions and the global
// connection accounting. Its query methods are safe for concurrent use
// and cheap (atomic loads; a random draw while an action is partly
// active), for the accept and request paths.
type Manager struct {
	log          logr.Logger
	clock        Clock
	rand         func() float64
	freeOSMemory func()
	runtime      *runtime.Runtime

	interval  time.Duration
	resources []*resource // polled monitors
	conns     connections
	byKind    [numActions]*action
	// states are the actions' states (float64 bits), read without a lock.
	states [numActions]atomic.Uint64
	timers [numTimers]timerMinimum
	// shrinkInterval and shrinkCount serve shrink_heap.
	shrinkInterval time.Duration
	shrinkCount    *stats.Counter
	// refreshDelay is overload.refresh_interval_delay; nil without an
	// overload_manager configuration.
	refreshDelay *stats.Histogram

	accept atomic.Pointer[acceptState]

	// mu guards the triggers and action values: monitors may report from
	// other goroutines than the refresh loop.
	mu          sync.Mutex
	lastRefresh time.Time // refresh loop only

	startOnce sync.Once
	stopOnce  sync.Once
	stopCh    chan struct{}
	wg        sync.WaitGroup
}

// acceptState is the state of stop_accepting_connections as the
// listeners watch it: changed is closed when it next changes.
type acceptState struct {
	paused  bool
	changed chan struct{}
}

// Start starts the refresh loop (when monitors are configured) and the
// shrink_heap loop (when that action is), and logs Envoy's start-up
// warnings about the global connection limit. The first refresh happens
// one refresh_interval after Start, as in Envoy.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		m.startupWarnings()
		if len(m.resources) > 0 || m.conns.res != nil {
			m.lastRefresh = m.clock.Now()
			m.wg.Add(1)
			go m.refreshLoop()
		}
		if m.byKind[shrinkHeap] != nil {
			m.wg.Add(1)
			go m.shrinkLoop()
		}
	})
}

// Stop stops the loops and waits for them. The actions keep their last
// state. It may be called more than once, and without Start.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() { close(m.stopCh) })
	m.wg.Wait()
	// Monitors that hold something (injected_resource's file watch)
	// release it; the loops that update them have returned.
	for _, r := range m.resources {
		if c, ok := r.monitor.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// startupWarnings logs what Envoy logs at start-up about the global
// downstream connection limit.
func (m *Manager) startupWarnings() {
	keySet := false
	if m.runtime != nil {
		_, keySet = m.runtime.Snapshot().Get(GlobalMaxConnectionsRuntimeKey)
	}
	if keySet {
		logging.Warning(m.log, "Usage of the deprecated runtime key "+GlobalMaxConnectionsRuntimeKey+
			", consider switching to `"+MonitorGlobalConnections+"` instead. This runtime key will be removed in future.")
	}
	if !keySet && m.conns.res == nil {
		logging.Warning(m.log, "There is no configured limit to the number of allowed active downstream connections. "+
			"Configure a limit in `"+MonitorGlobalConnections+"` resource monitor.")
	}
}

// refreshLoop refreshes the resources every refresh interval until Stop.
func (m *Manager) refreshLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.clock.After(m.interval):
			m.refresh()
		case <-m.stopCh:
			return
		}
	}
}

// refresh is one pass of the refresh loop: every polled monitor is asked
// for its pressure (unless its previous update is still pending, which is
// counted as skipped), the connections monitor's pressure is computed, and
// the delay since the previous pass goes to overload.refresh_interval_delay.
func (m *Manager) refresh() {
	for _, r := range m.resources {
		m.poll(r)
	}
	if r := m.conns.res; r != nil {
		m.report(r, m.conns.pressure(), nil)
	}
	now := m.clock.Now()
	if m.refreshDelay != nil {
		m.refreshDelay.Record(uint64(max(now.Sub(m.lastRefresh).Milliseconds(), 0)))
	}
	m.lastRefresh = now
}

// poll asks a polled monitor for an update.
func (m *Manager) poll(r *resource) {
	if !r.pending.CompareAndSwap(false, true) {
		m.log.V(1).Info("Skipping update for resource which has pending update", "resource", r.name)
		r.skipped.Inc()
		return
	}
	var once atomic.Bool
	r.monitor.Update(func(pressure float64, err error) {
		if !once.CompareAndSwap(false, true) {
			return // a monitor reports once per update
		}
		r.pending.Store(false)
		m.report(r, pressure, err)
	})
}

// report takes a monitor's update: a failure is counted and logged; a
// pressure updates the triggers on the resource, then its gauge.
func (m *Manager) report(r *resource, pressure float64, err error) {
	if err != nil {
		m.log.Info("Failed to update resource", "resource", r.name, "error", err.Error())
		r.failed.Inc()
		return
	}
	m.mu.Lock()
	for _, ref := range r.actions {
		old := ref.action.value
		if ref.action.update(ref.trigger, pressure) {
			m.publish(ref.action, old)
		}
	}
	m.mu.Unlock()
	r.pressure.Set(percent(pressure))
}

// publish makes an action's new state visible to its readers. m.mu is
// held.
func (m *Manager) publish(a *action, old float64) {
	m.states[a.kind].Store(math.Float64bits(a.value))
	was, is := old >= 1, a.value >= 1
	if was == is {
		return
	}
	word := "scaling"
	if is {
		word = "saturated"
	}
	m.log.V(1).Info("Overload action became "+word, "action", a.name)
	if a.kind == stopAcceptingConnections {
		m.setAcceptPaused(is)
	}
}

// setAcceptPaused records a new stop_accepting_connections state and
// wakes its watchers. m.mu is held.
func (m *Manager) setAcceptPaused(paused bool) {
	old := m.accept.Load()
	if old.paused == paused {
		return
	}
	m.accept.Store(&acceptState{paused: paused, changed: make(chan struct{})})
	close(old.changed)
}

// state is an action's current state.
func (m *Manager) state(k actionKind) float64 {
	return math.Float64frombits(m.states[k].Load())
}

// draw answers true with a probability equal to the action's state:
// never while inactive, always while saturated.
func (m *Manager) draw(k actionKind) bool {
	v := m.state(k)
	switch {
	case v <= 0:
		return false
	case v >= 1:
		return true
	default:
		return m.rand() < v
	}
}

// defaults fills the optional dependencies.
func (d Deps) withDefaults() Deps {
	if d.Clock == nil {
		d.Clock = realClock{}
	}
	if d.HeapInUse == nil {
		d.HeapInUse = HeapInUse
	}
	if d.FreeOSMemory == nil {
		d.FreeOSMemory = debug.FreeOSMemory
	}
	if d.Rand == nil {
		d.Rand = rand.Float64
	}
	return d
}
