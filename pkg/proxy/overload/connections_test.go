package overload

import (
	"sync"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stat names of the downstream connections monitor.
const (
	connsPressure = "overload.envoy.resource_monitors.global_downstream_max_connections.pressure"
	connsFailed   = "overload.envoy.resource_monitors.global_downstream_max_connections.failed_updates"
)

// adminRuntime is a runtime with an admin layer the test can write.
func adminRuntime(t *testing.T, pairs map[string]string) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(parseLayered(t), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) > 0 {
		if err := rt.Modify(pairs); err != nil {
			t.Fatal(err)
		}
	}
	return rt
}

// TestGlobalLimitFromMonitor: the monitor admits connections up to its
// maximum, refuses the next ones (counting failed_updates), admits again
// once connections close; ignore_global_conn_limit connections are
// counted but never refused. Its pressure is computed at refresh.
func TestGlobalLimitFromMonitor(t *testing.T) {
	m, store := testManager(t, `resource_monitors: [{name: envoy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": `+connsURL+`, max_active_downstream_connections: 3}}]`, nil, nil)
	for i := range 3 {
		if !m.AcquireConnection(true) {
			t.Fatalf("connection %d refused under the limit", i)
		}
	}
	for range 2 {
		if m.AcquireConnection(true) {
			t.Fatal("a connection past the limit was admitted")
		}
	}
	if got := counter(store, connsFailed); got != 2 {
		t.Errorf("failed_updates = %d, want 2", got)
	}
	m.refresh()
	if got := gauge(store, connsPressure); got != 100 {
		t.Errorf("pressure = %d, want 100", got)
	}
	if !m.AcquireConnection(false) {
		t.Fatal("a connection that ignores the limit was refused")
	}
	if got := m.OpenConnections(); got != 4 {
		t.Fatalf("open connections = %d, want 4 (ignoring ones are counted)", got)
	}
	m.refresh()
	if got := gauge(store, connsPressure); got != 133 {
		t.Errorf("pressure = %d, want 133", got)
	}
	m.ReleaseConnection()
	if m.AcquireConnection(true) {
		t.Fatal("admitted at the limit (3 open)")
	}
	m.ReleaseConnection()
	if !m.AcquireConnection(true) {
		t.Fatal("refused under the limit after a close")
	}
}

// TestGlobalLimitConcurrent: concurrent accepts never pass the limit.
func TestGlobalLimitConcurrent(t *testing.T) {
	m, _ := testManager(t, `resource_monitors: [{name: envoy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": `+connsURL+`, max_active_downstream_connections: 50}}]`, nil, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if m.AcquireConnection(true) {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if admitted != 50 || m.OpenConnections() != 50 {
		t.Errorf("admitted %d, open %d; want 50", admitted, m.OpenConnections())
	}
}

// TestGlobalLimitFromRuntime: without the monitor, the runtime key
// overload.global_downstream_max_connections is the limit, read at each
// accept; a malformed value is no limit.
func TestGlobalLimitFromRuntime(t *testing.T) {
	rt := adminRuntime(t, map[string]string{GlobalMaxConnectionsRuntimeKey: "2"})
	store := stats.NewStore()
	m, err := New(nil, Deps{Stats: store, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if !m.AcquireConnection(true) {
			t.Fatal("refused under the runtime limit")
		}
	}
	if m.AcquireConnection(true) {
		t.Fatal("admitted past the runtime limit")
	}
	if err := rt.Modify(map[string]string{GlobalMaxConnectionsRuntimeKey: "3"}); err != nil {
		t.Fatal(err)
	}
	if !m.AcquireConnection(true) {
		t.Fatal("the raised limit is not read at accept time")
	}
	for _, v := range []string{"lots", "-1"} {
		if err := rt.Modify(map[string]string{GlobalMaxConnectionsRuntimeKey: v}); err != nil {
			t.Fatal(err)
		}
		if !m.AcquireConnection(true) {
			t.Errorf("value %q limits connections; want no limit", v)
		}
	}
	// A number with a fraction counts its whole part, as in Envoy: 4.5 is
	// 4, and 5 are open.
	if err := rt.Modify(map[string]string{GlobalMaxConnectionsRuntimeKey: "4.5"}); err != nil {
		t.Fatal(err)
	}
	if m.AcquireConnection(true) {
		t.Error("admitted past a limit of 4.5")
	}
	if err := rt.Modify(map[string]string{GlobalMaxConnectionsRuntimeKey: "0"}); err != nil {
		t.Fatal(err)
	}
	if m.AcquireConnection(true) {
		t.Error("a limit of 0 admitted a connection")
	}
}

// TestGlobalLimitBoth: with the monitor and the runtime key, the monitor
// wins and the conflict is logged once, as Envoy does; the start-up
// warnings are Envoy's.
func TestGlobalLimitBoth(t *testing.T) {
	rt := adminRuntime(t, map[string]string{GlobalMaxConnectionsRuntimeKey: "1"})
	var logs logLines
	m, err := New(parseConfig(t, `resource_monitors: [{name: envoy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": `+connsURL+`, max_active_downstream_connections: 3}}]`),
		Deps{Stats: stats.NewStore(), Runtime: rt, Log: logs.logger(), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Stop()
	if logs.count("Usage of the deprecated runtime key overload.global_downstream_max_connections") != 1 {
		t.Errorf("no start-up warning about the deprecated key: %q", logs.lines)
	}
	for i := range 3 {
		if !m.AcquireConnection(true) {
			t.Fatalf("connection %d refused: the runtime key's limit was used", i)
		}
	}
	if n := logs.count("is configured via deprecated runtime key overload.global_downstream_max_connections and in envoy.resource_monitors.global_downstream_max_connections. Using overload manager config."); n != 1 {
		t.Errorf("the conflict was logged %d times, want once: %q", n, logs.lines)
	}
}

// TestNoLimitWarning: with neither the monitor nor the runtime key,
// Start warns that connections are unlimited.
func TestNoLimitWarning(t *testing.T) {
	var logs logLines
	m, err := New(nil, Deps{Stats: stats.NewStore(), Log: logs.logger(), Runtime: adminRuntime(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Stop()
	if logs.count("There is no configured limit to the number of allowed active downstream connections.") != 1 {
		t.Errorf("no warning: %q", logs.lines)
	}
	for i := range 1000 {
		if !m.AcquireConnection(true) {
			t.Fatalf("connection %d refused without a limit", i)
		}
	}
}

// parseLayered is a layered runtime with one admin layer.
func parseLayered(t *testing.T) *bootstrapv3.LayeredRuntime {
	t.Helper()
	return &bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{{
		Name:           "admin",
		LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}},
	}}}
}
