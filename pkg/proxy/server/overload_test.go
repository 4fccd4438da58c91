package server

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// overloadBootstrap is a bootstrap with an admin runtime layer, the given
// overload_manager (YAML flow style, "" for none) and one listener "l".
func overloadBootstrap(overloadManager string) string {
	b := "layered_runtime: {layers: [{name: admin, admin_layer: {}}]}\n"
	if overloadManager != "" {
		b += "overload_manager: " + overloadManager + "\n"
	}
	return b + withListeners(hcmListener("l", "ok", ""))
}

// connsMonitor is the downstream connections monitor with a limit of 1.
const connsMonitor = `{name: envoy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig, max_active_downstream_connections: 1}}`

func TestOverloadConfigErrors(t *testing.T) {
	_, err := buildListenerServer(t, overloadBootstrap(`{refresh_interval: 0s, resource_monitors: [`+connsMonitor+`], actions: [{name: envoy.overload_actions.fly, triggers: [{name: envoy.resource_monitors.global_downstream_max_connections, threshold: {value: 0.5}}]}, {name: envoy.overload_actions.shrink_heap, triggers: [{name: nothing, threshold: {value: 0.5}}]}]}`))
	if err == nil {
		t.Fatal("New accepted a broken overload_manager")
	}
	want := []string{
		"overload_manager.refresh_interval: must be at least 1ms (got 0s)",
		"overload_manager.actions[0].name: Unknown Overload Manager Action envoy.overload_actions.fly",
		"overload_manager.actions[1].triggers[0].name: Unknown trigger resource nothing for overload action envoy.overload_actions.shrink_heap",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d lines", err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d = %q, want it to start with %q", i, lines[i], w)
		}
	}
}

// dialAnswered connects to addr, sends a GET and reports whether an HTTP
// answer came back (false when the listener closed the connection).
func dialAnswered(t *testing.T, addr string) (net.Conn, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, netTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(netTimeout))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return c, false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return c, err == nil && strings.HasPrefix(line, "HTTP/1.1 200")
}

// TestOverloadGlobalLimitOnListeners: the server's listeners consult the
// overload manager it builds.
func TestOverloadGlobalLimitOnListeners(t *testing.T) {
	s := startListenerServer(t, overloadBootstrap(`{resource_monitors: [`+connsMonitor+`]}`))
	addr := listenerAddr(t, s, "l")
	first, ok := dialAnswered(t, addr)
	if !ok {
		t.Fatal("the first connection was not served")
	}
	if _, ok := dialAnswered(t, addr); ok {
		t.Fatal("a connection past the global limit was served")
	}
	const scope = "listener.127.0.0.1_0." // the configured address names the scope
	if got := s.stats.Counter(scope + "downstream_global_cx_overflow").Value(); got != 1 {
		t.Errorf("downstream_global_cx_overflow = %d, want 1", got)
	}
	if got := s.stats.Counter("overload.envoy.resource_monitors.global_downstream_max_connections.failed_updates").Value(); got != 1 {
		t.Errorf("failed_updates = %d, want 1", got)
	}
	first.Close()
	waitUntil(t, "the first connection's end", func() bool { return s.overload.OpenConnections() == 0 })
	if _, ok := dialAnswered(t, addr); !ok {
		t.Fatal("not served once the first connection closed")
	}
}

// TestOverloadListenerLimitFromRuntime: the listeners read their runtime
// connection limit from the server's runtime, so /runtime_modify changes
// it at once.
func TestOverloadListenerLimitFromRuntime(t *testing.T) {
	s := startListenerServer(t, overloadBootstrap(""))
	addr := listenerAddr(t, s, "l")
	if err := s.runtime.Modify(map[string]string{"envoy.resource_limits.listener.l.connection_limit": "0"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := dialAnswered(t, addr); ok {
		t.Fatal("served past a listener limit of 0")
	}
	const scope = "listener.127.0.0.1_0." // the configured address names the scope
	if got := s.stats.Counter(scope + "downstream_cx_overflow").Value(); got != 1 {
		t.Errorf("downstream_cx_overflow = %d, want 1", got)
	}
	if err := s.runtime.Modify(map[string]string{"envoy.resource_limits.listener.l.connection_limit": ""}); err != nil {
		t.Fatal(err)
	}
	if _, ok := dialAnswered(t, addr); !ok {
		t.Fatal("not served once the limit was removed")
	}
}

// TestOverloadStartStop: the server starts the manager's refresh loop and
// stops it.
func TestOverloadStartStop(t *testing.T) {
	s, err := buildListenerServer(t, overloadBootstrap(`{refresh_interval: 0.01s, resource_monitors: [{name: heap, typed_config: {"@type": type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig, max_heap_size_bytes: 1024}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s.startOverload()
	waitUntil(t, "a refresh", func() bool { return s.stats.Gauge("overload.heap.pressure").Value() > 100 })
	done := make(chan struct{})
	go func() { s.stopOverload(); close(done) }()
	select {
	case <-done:
	case <-time.After(netTimeout):
		t.Fatal("stopOverload did not return")
	}
}
