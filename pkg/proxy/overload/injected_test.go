package overload

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stat names of the injected_resource monitor.
const (
	injectedPressure = "overload.envoy.resource_monitors.injected_resource.pressure"
	injectedFailed   = "overload.envoy.resource_monitors.injected_resource.failed_updates"
)

// moveFile writes text to a new file and moves it over path, the way the
// injected pressure is meant to change.
func moveFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestInjectedResource: the pressure is the file's number; a write in
// place is not read (Envoy reads after a move only), a move is; a bad
// number or one out of [0, 1] is a failed update (with Envoy's message)
// until a good file is moved in; the action follows the pressure.
func TestInjectedResource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pressure")
	moveFile(t, path, "0.25\n")
	config := `resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": ` + injectedURL + `, filename: ` + path + `}}]
actions: [{name: envoy.overload_actions.stop_accepting_connections, triggers: [{name: envoy.resource_monitors.injected_resource, threshold: {value: 0.9}}]}]`
	m, store := testManager(t, config, nil, nil)
	m.refresh()
	if got := gauge(store, injectedPressure); got != 25 {
		t.Fatalf("pressure = %d, want 25", got)
	}
	// In place: the next refreshes keep 25.
	if err := os.WriteFile(path, []byte("0.5"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.refresh()
	if got := gauge(store, injectedPressure); got != 25 {
		t.Fatalf("pressure after a write in place = %d, want 25 (only moves are read)", got)
	}
	// A move: read at a refresh once the watch has seen it.
	moveFile(t, path, " 0.95 ")
	refreshUntil(t, m, func() bool { return gauge(store, injectedPressure) == 95 })
	if paused, _ := m.AcceptState(); !paused {
		t.Error("stop_accepting_connections not active at 95%")
	}
	for _, bad := range []struct{ text, err string }{
		{"high", "failed to parse injected resource pressure"},
		{"1.5", "pressure out of range"},
		{"-0.1", "pressure out of range"},
		{"NaN", "pressure out of range"},
	} {
		moveFile(t, path, bad.text)
		r := injectedMonitor(t, m)
		refreshUntil(t, m, func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.err != nil && r.err.Error() == bad.err
		})
		before := counter(store, injectedFailed)
		m.refresh()
		if got := counter(store, injectedFailed); got != before+1 {
			t.Errorf("%q: failed_updates %d after a refresh, want %d", bad.text, got, before+1)
		}
	}
	moveFile(t, path, "0")
	refreshUntil(t, m, func() bool { return gauge(store, injectedPressure) == 0 })
	if paused, _ := m.AcceptState(); paused {
		t.Error("stop_accepting_connections still active at 0%")
	}
}

// TestInjectedResourceFileMissing: a missing file is a failed update, and
// the file moved in later is read.
func TestInjectedResourceFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pressure")
	config := `resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": ` + injectedURL + `, filename: ` + path + `}}]`
	m, store := testManager(t, config, nil, nil)
	m.refresh()
	if got := counter(store, injectedFailed); got != 1 {
		t.Fatalf("failed_updates = %d, want 1", got)
	}
	moveFile(t, path, "0.5")
	refreshUntil(t, m, func() bool { return gauge(store, injectedPressure) == 50 })
}

// TestInjectedResourceStopReleasesWatch: Stop closes the monitor's watch.
func TestInjectedResourceStopReleasesWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pressure")
	moveFile(t, path, "0.5")
	cfg := parseConfig(t, `resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": `+injectedURL+`, filename: `+path+`}}]`)
	m, err := New(cfg, Deps{Stats: stats.NewStore(), Log: logr.Discard(), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	m.refresh()
	r := injectedMonitor(t, m)
	w := r.watch
	if w == nil {
		t.Fatal("no watch after the first update")
	}
	m.Stop()
	select {
	case _, ok := <-w.Moved():
		if ok {
			t.Fatal("a signal instead of the end of the watch")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch still runs after Stop")
	}
}

// injectedMonitor is m's injected_resource monitor.
func injectedMonitor(t *testing.T, m *Manager) *injectedResource {
	t.Helper()
	for _, r := range m.resources {
		if ir, ok := r.monitor.(*injectedResource); ok {
			return ir
		}
	}
	t.Fatal("no injected_resource monitor")
	return nil
}

// refreshUntil refreshes m until done holds, or fails the test.
func refreshUntil(t *testing.T, m *Manager, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.refresh()
		if done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("condition not reached after 10 s of refreshes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
