package overload

import (
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stat names of the fixed_heap monitor and of the actions under test.
const (
	heapPressure  = "overload.envoy.resource_monitors.fixed_heap.pressure"
	stopConnsAct  = "overload.envoy.overload_actions.stop_accepting_connections.active"
	stopConnsPct  = "overload.envoy.overload_actions.stop_accepting_connections.scale_percent"
	keepaliveAct  = "overload.envoy.overload_actions.disable_http_keepalive.active"
	keepalivePct  = "overload.envoy.overload_actions.disable_http_keepalive.scale_percent"
	rejectConnAct = "overload.envoy.overload_actions.reject_incoming_connections.active"
)

// pressureConfig has a fixed_heap monitor of 1000 bytes with
// stop_accepting_connections at 0.9 and disable_http_keepalive scaled
// between 0.5 and 0.7.
const pressureConfig = `
resource_monitors: [` + heapMonitor + `]
actions:
- {name: envoy.overload_actions.stop_accepting_connections, triggers: [` + heapTrigger + `]}
- {name: envoy.overload_actions.disable_http_keepalive, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.5, saturation_threshold: 0.7}}]}
`

// TestRefreshDrivesActions: each refresh reads the heap; the pressure,
// the actions' states and their stats follow it up and back down.
func TestRefreshDrivesActions(t *testing.T) {
	h := &heap{}
	m, store := testManager(t, pressureConfig, h, nil)
	steps := []struct {
		heap                uint64
		pressure            int64
		stopActive, stopPct int64
		keepActive, keepPct int64
		paused              bool
		keepaliveState      float64
	}{
		{heap: 100, pressure: 10},
		{heap: 600, pressure: 60, keepPct: 50, keepaliveState: 0.5},
		{heap: 700, pressure: 70, keepActive: 1, keepPct: 100, keepaliveState: 1},
		{heap: 950, pressure: 95, stopActive: 1, stopPct: 100, keepActive: 1, keepPct: 100, paused: true, keepaliveState: 1},
		{heap: 5000, pressure: 500, stopActive: 1, stopPct: 100, keepActive: 1, keepPct: 100, paused: true, keepaliveState: 1},
		{heap: 650, pressure: 65, keepPct: 75, keepaliveState: 0.75},
		{heap: 0, pressure: 0},
	}
	for i, s := range steps {
		h.set(s.heap)
		m.refresh()
		got := []int64{gauge(store, heapPressure), gauge(store, stopConnsAct), gauge(store, stopConnsPct), gauge(store, keepaliveAct), gauge(store, keepalivePct)}
		want := []int64{s.pressure, s.stopActive, s.stopPct, s.keepActive, s.keepPct}
		for k := range got {
			if got[k] != want[k] {
				t.Errorf("step %d (heap %d): pressure, stop active, stop %%, keepalive active, keepalive %% = %v, want %v", i, s.heap, got, want)
				break
			}
		}
		if paused, _ := m.AcceptState(); paused != s.paused {
			t.Errorf("step %d: AcceptState paused = %v, want %v", i, paused, s.paused)
		}
		if v := m.state(disableHTTPKeepalive); !near(v, s.keepaliveState) {
			t.Errorf("step %d: disable_http_keepalive state = %v, want %v", i, v, s.keepaliveState)
		}
	}
}

// TestAcceptStateWakesWatchers: the channel AcceptState returns is closed
// when stop_accepting_connections changes, and only then.
func TestAcceptStateWakesWatchers(t *testing.T) {
	h := &heap{}
	m, _ := testManager(t, pressureConfig, h, nil)
	paused, changed := m.AcceptState()
	if paused {
		t.Fatal("paused before any pressure")
	}
	h.set(600) // keepalive scales; stop_accepting_connections does not move
	m.refresh()
	select {
	case <-changed:
		t.Fatal("woken by another action's change")
	default:
	}
	h.set(900)
	m.refresh()
	select {
	case <-changed:
	default:
		t.Fatal("not woken when the action saturated")
	}
	paused, changed = m.AcceptState()
	if !paused {
		t.Fatal("not paused after saturation")
	}
	h.set(100)
	m.refresh()
	select {
	case <-changed:
	default:
		t.Fatal("not woken when the action cleared")
	}
	if paused, _ := m.AcceptState(); paused {
		t.Fatal("still paused after the pressure dropped")
	}
}

// TestActionTakesHighestTrigger: an action with two triggers is in the
// state of the higher one.
func TestActionTakesHighestTrigger(t *testing.T) {
	h := &heap{}
	m, store := testManager(t, `
resource_monitors: [`+heapMonitor+`, `+connsMonitor+`]
actions:
- name: envoy.overload_actions.reject_incoming_connections
  triggers:
  - {name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.5, saturation_threshold: 1}}
  - {name: envoy.resource_monitors.global_downstream_max_connections, threshold: {value: 0.3}}
`, h, nil)
	h.set(750)
	m.refresh()
	if v := m.state(rejectIncomingConnections); !near(v, 0.5) {
		t.Fatalf("state = %v, want 0.5 from the heap", v)
	}
	for range 3 { // 3 of 10 connections: the threshold trigger fires
		if !m.AcquireConnection(true) {
			t.Fatal("connection refused under the limit")
		}
	}
	m.refresh()
	if v, a := m.state(rejectIncomingConnections), gauge(store, rejectConnAct); v != 1 || a != 1 {
		t.Fatalf("state = %v, active = %d; want saturated by the connections", v, a)
	}
	for range 3 {
		m.ReleaseConnection()
	}
	m.refresh()
	if v, a := m.state(rejectIncomingConnections), gauge(store, rejectConnAct); !near(v, 0.5) || a != 0 {
		t.Fatalf("state = %v, active = %d; want back to the heap's 0.5", v, a)
	}
}

// asyncMonitor holds its reports until the test releases them.
type asyncMonitor struct{ reports chan func(float64, error) }

func (a *asyncMonitor) Update(report func(float64, error)) { a.reports <- report }

// TestPendingUpdateIsSkipped: while a monitor's update has not reported,
// further refreshes skip it and count skipped_updates; a failed update
// counts failed_updates and leaves the pressure as it was.
func TestPendingUpdateIsSkipped(t *testing.T) {
	m, store := testManager(t, pressureConfig, nil, nil)
	mon := &asyncMonitor{reports: make(chan func(float64, error), 1)}
	m.resources[0].monitor = mon
	m.refresh() // pending
	m.refresh() // skipped
	m.refresh() // skipped
	if got := counter(store, "overload.envoy.resource_monitors.fixed_heap.skipped_updates"); got != 2 {
		t.Fatalf("skipped_updates = %d, want 2", got)
	}
	report := <-mon.reports
	report(0.95, nil)
	report(0.1, nil) // a second report of one update is ignored
	if got := gauge(store, heapPressure); got != 95 {
		t.Fatalf("pressure = %d, want 95", got)
	}
	m.refresh() // no longer pending
	(<-mon.reports)(0, errors.New("cannot read"))
	if got := counter(store, "overload.envoy.resource_monitors.fixed_heap.failed_updates"); got != 1 {
		t.Fatalf("failed_updates = %d, want 1", got)
	}
	if got := gauge(store, heapPressure); got != 95 {
		t.Fatalf("pressure after a failure = %d, want 95 (unchanged)", got)
	}
	if got := counter(store, "overload.envoy.resource_monitors.fixed_heap.skipped_updates"); got != 2 {
		t.Fatalf("skipped_updates = %d, want still 2", got)
	}
}

// TestRefreshLoop: Start refreshes once per refresh_interval of the
// clock, records the delay between refreshes, and Stop ends the loop.
func TestRefreshLoop(t *testing.T) {
	clock := newFakeClock()
	h := &heap{}
	m, store := testManager(t, "refresh_interval: 0.25s\n"+pressureConfig, h, clock)
	m.Start()
	m.Start() // once only
	h.set(950)
	clock.tick(t, 250*time.Millisecond)
	clock.advance(time.Second) // a late refresh
	clock.tick(t, 250*time.Millisecond)
	// The loop is back waiting once this third tick is taken, so the
	// second refresh is complete.
	h.set(100)
	clock.tick(t, 250*time.Millisecond)
	m.Stop()
	m.Stop()
	if got := gauge(store, heapPressure); got != 10 {
		t.Errorf("pressure = %d, want 10 after the third refresh", got)
	}
	store.MergeHistograms()
	st := store.Histogram("overload.refresh_interval_delay").CumulativeStatistics()
	if st.SampleCount != 3 {
		t.Fatalf("refresh_interval_delay has %d samples, want 3", st.SampleCount)
	}
	// The histogram's sum is approximate (bin midpoints).
	if math.Abs(st.SampleSum-(250+1250+250)) > 100 {
		t.Errorf("refresh_interval_delay sum = %v ms, want about 1750", st.SampleSum)
	}
	select {
	case clock.chanFor(250 * time.Millisecond) <- clock.Now():
		t.Error("the loop still runs after Stop")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestNoLoopWithoutMonitors: with nothing to refresh, Start runs no loop.
func TestNoLoopWithoutMonitors(t *testing.T) {
	clock := newFakeClock()
	m, _ := testManager(t, "", nil, clock)
	m.Start()
	select {
	case clock.chanFor(DefaultRefreshInterval) <- clock.Now():
		t.Error("a refresh loop runs without monitors")
	case <-time.After(50 * time.Millisecond):
	}
	m.Stop()
}

// TestDraw: the actions that apply to a share of connections or requests
// answer with the probability of their state.
func TestDraw(t *testing.T) {
	h := &heap{}
	store := stats.NewStore()
	draws := []float64{}
	next := 0.0
	m, err := New(parseConfig(t, `
resource_monitors: [`+heapMonitor+`]
actions:
- {name: envoy.overload_actions.stop_accepting_requests, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.5, saturation_threshold: 0.9}}]}
- {name: proxy.overload_actions.disable_http_keepalive, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.5, saturation_threshold: 0.9}}]}
- {name: envoy.overload_actions.reject_incoming_connections, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.5, saturation_threshold: 0.9}}]}
`), Deps{Stats: store, HeapInUse: h.read, Rand: func() float64 { draws = append(draws, next); return next }})
	if err != nil {
		t.Fatal(err)
	}
	queries := map[string]func() bool{
		"StopAcceptingRequests": m.StopAcceptingRequests,
		"DisableKeepalive":      m.DisableKeepalive,
		"RejectConnection":      m.RejectConnection,
	}
	steps := []struct {
		heap  uint64
		rand  float64
		want  bool
		draws int // whether a number is drawn
	}{
		{heap: 100, rand: 0, want: false, draws: 0},    // inactive: never, no draw
		{heap: 700, rand: 0.49, want: true, draws: 1},  // state 0.5
		{heap: 700, rand: 0.5, want: false, draws: 1},  // state 0.5
		{heap: 900, rand: 0.999, want: true, draws: 0}, // saturated: always, no draw
	}
	for i, s := range steps {
		h.set(s.heap)
		m.refresh()
		next = s.rand
		for name, q := range queries {
			draws = draws[:0]
			if got := q(); got != s.want || len(draws) != s.draws {
				t.Errorf("step %d: %s = %v with %d draws, want %v with %d", i, name, got, len(draws), s.want, s.draws)
			}
		}
	}
}

// shrinkConfig has shrink_heap on the fixed_heap monitor of 1000 bytes,
// scaled between 0.5 and 0.9, every 3 s.
const shrinkConfig = `
resource_monitors: [` + heapMonitor + `]
actions:
- name: envoy.overload_actions.shrink_heap
  triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.5, saturation_threshold: 0.9}}]
  typed_config: {"@type": ` + shrinkURL + `, timer_interval: 3s}
`

// shrinkCount is the shrink_heap counter of shrinkConfig.
const shrinkCount = "overload.envoy.overload_actions.shrink_heap.shrink_count"

// TestShrinkHeap: while shrink_heap is saturated, each run frees memory
// and counts shrink_count; otherwise a run does nothing.
func TestShrinkHeap(t *testing.T) {
	h := &heap{}
	store := stats.NewStore()
	freed := 0
	m, err := New(parseConfig(t, shrinkConfig), Deps{Stats: store, HeapInUse: h.read, FreeOSMemory: func() { freed++ }})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []struct {
		heap uint64
		want int
	}{{100, 0}, {700, 0}, {900, 1}, {2000, 2}, {899, 2}, {0, 2}} {
		h.set(s.heap)
		m.refresh()
		m.shrinkOnce()
		if freed != s.want || counter(store, shrinkCount) != uint64(s.want) {
			t.Errorf("step %d (heap %d): freed %d times, shrink_count %d; want %d", i, s.heap, freed, counter(store, shrinkCount), s.want)
		}
	}
}

// TestShrinkHeapLoop: the loop runs every timer_interval of the clock.
func TestShrinkHeapLoop(t *testing.T) {
	clock := newFakeClock()
	h := &heap{}
	store := stats.NewStore()
	var freed atomic.Int32
	m, err := New(parseConfig(t, shrinkConfig), Deps{Stats: store, HeapInUse: h.read, Clock: clock, FreeOSMemory: func() { freed.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	h.set(950)
	m.refresh() // saturated
	m.Start()
	t.Cleanup(m.Stop)
	for range 3 {
		clock.tick(t, 3*time.Second)
	}
	m.Stop() // waits for the loop, so the third run is complete
	if got := counter(store, shrinkCount); got != 3 || freed.Load() != 3 {
		t.Errorf("shrink_count = %d, freed %d times; want 3", got, freed.Load())
	}
}

// TestHeapInUse: the real reading follows the Go heap.
func TestHeapInUse(t *testing.T) {
	runtime.GC()
	before := HeapInUse()
	if before == 0 {
		t.Fatal("HeapInUse = 0")
	}
	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
	}
	if after := HeapInUse(); after < before+48<<20 {
		t.Errorf("HeapInUse went from %d to %d after allocating 64 MiB", before, after)
	}
	runtime.KeepAlive(keep)
}

// TestHeapMaximumFromRuntime: with max_heap_size_bytes_runtime the
// maximum is the runtime key's value at each refresh (its default when
// unset), so an admin layer change moves the pressure; a key set to 0
// later is a failed update.
func TestHeapMaximumFromRuntime(t *testing.T) {
	h := &heap{}
	h.set(500)
	rt := adminRuntime(t, nil)
	store := stats.NewStore()
	cfg := parseConfig(t, `resource_monitors: [{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": `+heapURL+`, max_heap_size_bytes_runtime: {default_value: 1000, runtime_key: heap.max}}}]`)
	m, err := New(cfg, Deps{Stats: store, Log: logr.Discard(), Clock: newFakeClock(), HeapInUse: h.read, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	m.refresh()
	if got := gauge(store, heapPressure); got != 50 {
		t.Fatalf("pressure with the default 1000 = %d, want 50", got)
	}
	if err := rt.Modify(map[string]string{"heap.max": "2000"}); err != nil {
		t.Fatal(err)
	}
	m.refresh()
	if got := gauge(store, heapPressure); got != 25 {
		t.Fatalf("pressure with heap.max 2000 = %d, want 25", got)
	}
	if err := rt.Modify(map[string]string{"heap.max": "0"}); err != nil {
		t.Fatal(err)
	}
	m.refresh()
	if got := counter(store, "overload.envoy.resource_monitors.fixed_heap.failed_updates"); got != 1 {
		t.Fatalf("failed_updates with heap.max 0 = %d, want 1", got)
	}
}
