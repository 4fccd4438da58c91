package overload

import (
	"slices"
	"strings"
	"testing"
	"time"

	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Pieces of configuration for the table tests.
const (
	heapURL     = "type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig"
	connsURL    = "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig"
	timersURL   = "type.googleapis.com/envoy.config.overload.v3.ScaleTimersOverloadActionConfig"
	shrinkURL   = "type.googleapis.com/envoy.config.overload.v3.ShrinkHeapConfig"
	injectedURL = "type.googleapis.com/envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig"

	heapMonitor  = `{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": ` + heapURL + `, max_heap_size_bytes: 1000}}`
	connsMonitor = `{name: envoy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": ` + connsURL + `, max_active_downstream_connections: 10}}`
	heapTrigger  = `{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.9}}`
)

// monitorsAnd is a configuration with both monitors and the given actions.
func monitorsAnd(actions string) string {
	return "resource_monitors: [" + heapMonitor + ", " + connsMonitor + "]\nactions: [" + actions + "]"
}

func TestNewErrors(t *testing.T) {
	tests := map[string]struct {
		config string
		want   []string
	}{
		"zero refresh interval": {
			config: "refresh_interval: 0s\nresource_monitors: [" + heapMonitor + "]",
			want:   []string{"refresh_interval: must be at least 1ms (got 0s)"},
		},
		"sub-millisecond refresh interval": {
			config: "refresh_interval: 0.0005s\nresource_monitors: [" + heapMonitor + "]",
			want:   []string{"refresh_interval: must be at least 1ms (got 500µs)"},
		},
		"monitor without name": {
			config: `resource_monitors: [{typed_config: {"@type": ` + heapURL + `, max_heap_size_bytes: 1}}]`,
			want:   []string{"resource_monitors[0].name: must be set"},
		},
		"monitor without config": {
			config: `resource_monitors: [{name: envoy.resource_monitors.fixed_heap}]`,
			want: []string{"resource_monitors[0].typed_config: required: the monitor's configuration " +
				"(envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig or " +
				"envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig)"},
		},
		"another monitor": {
			config: `resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": type.googleapis.com/envoy.config.overload.v3.ThresholdTrigger}}]`,
			want:   []string{"resource_monitors[0].typed_config: resource monitor envoy.config.overload.v3.ThresholdTrigger is not supported by Outrigger"},
		},
		"a valid monitor": {
			config: `resource_monitors: [` + heapMonitor + `]`,
			want:   nil,
		},
		"heap of zero bytes": {
			config: `resource_monitors: [{name: heap, typed_config: {"@type": ` + heapURL + `}}]`,
			want:   []string{"resource_monitors[0].typed_config: fixed_heap: exactly one of max_heap_size_bytes or max_heap_size_bytes_runtime must be set"},
		},
		"heap size given twice": {
			config: `resource_monitors: [{name: heap, typed_config: {"@type": ` + heapURL + `, max_heap_size_bytes: 5, max_heap_size_bytes_runtime: {default_value: 5, runtime_key: k}}}]`,
			want:   []string{"resource_monitors[0].typed_config: fixed_heap: exactly one of max_heap_size_bytes or max_heap_size_bytes_runtime must be set"},
		},
		"heap size from the runtime of zero bytes": {
			config: `resource_monitors: [{name: heap, typed_config: {"@type": ` + heapURL + `, max_heap_size_bytes_runtime: {runtime_key: k}}}]`,
			want:   []string{"resource_monitors[0].typed_config.max_heap_size_bytes_runtime: fixed_heap: max heap size must be greater than 0"},
		},
		"injected resource without a file": {
			config: `resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": ` + injectedURL + `}}]`,
			want:   []string{"resource_monitors[0].typed_config.filename: must be set"},
		},
		"injected resource in a missing directory": {
			config: `resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": ` + injectedURL + `, filename: /nonexistent-outrigger-dir/pressure}}]`,
			want:   []string{"resource_monitors[0].typed_config.filename: the file's directory cannot be watched: stat /nonexistent-outrigger-dir: no such file or directory"},
		},
		"connections monitor under another name": {
			config: `resource_monitors: [{name: conns, typed_config: {"@type": ` + connsURL + `, max_active_downstream_connections: 5}}]`,
			want: []string{"resource_monitors[0].name: the downstream connections monitor must be named " +
				"envoy.resource_monitors.global_downstream_max_connections (or proxy.resource_monitors.global_downstream_max_connections)"},
		},
		"heap monitor under the connections name": {
			config: `resource_monitors: [{name: proxy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": ` + heapURL + `, max_heap_size_bytes: 5}}]`,
			want: []string{"resource_monitors[0].typed_config: the resource monitor named proxy.resource_monitors.global_downstream_max_connections " +
				"takes a envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig"},
		},
		"no connections": {
			config: `resource_monitors: [{name: envoy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": ` + connsURL + `}}]`,
			want:   []string{"resource_monitors[0].typed_config.max_active_downstream_connections: must be greater than 0"},
		},
		"duplicate monitor in the other spelling": {
			config: `resource_monitors: [` + heapMonitor + `, {name: proxy.resource_monitors.fixed_heap, typed_config: {"@type": ` + heapURL + `, max_heap_size_bytes: 5}}]`,
			want:   []string{"resource_monitors[1].name: duplicate resource monitor proxy.resource_monitors.fixed_heap (resource_monitors[0] has the same name)"},
		},
		"unknown action": {
			config: monitorsAnd(`{name: envoy.overload_actions.go_faster, triggers: [` + heapTrigger + `]}`),
			want: []string{"actions[0].name: Unknown Overload Manager Action envoy.overload_actions.go_faster (supported: " +
				"envoy.overload_actions.stop_accepting_requests, envoy.overload_actions.disable_http_keepalive, " +
				"envoy.overload_actions.stop_accepting_connections, envoy.overload_actions.reject_incoming_connections, " +
				"envoy.overload_actions.reduce_timeouts, envoy.overload_actions.shrink_heap)"},
		},
		"action Outrigger does not implement": {
			config: monitorsAnd(`{name: envoy.overload_actions.reset_high_memory_stream, triggers: [` + heapTrigger + `]}`),
			want:   []string{"actions[0].name: overload action envoy.overload_actions.reset_high_memory_stream is not supported by Outrigger"},
		},
		"duplicate action in the other spelling": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapTrigger + `]}, {name: proxy.overload_actions.shrink_heap, triggers: [` + heapTrigger + `]}`),
			want:   []string{"actions[1].name: duplicate overload action proxy.overload_actions.shrink_heap (actions[0] is the same action)"},
		},
		"no trigger": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap}`),
			want:   []string{"actions[0].triggers: at least one trigger is required"},
		},
		"unknown trigger resource": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap, triggers: [{name: envoy.resource_monitors.cpu_utilization, threshold: {value: 0.5}}]}`),
			want:   []string{"actions[0].triggers[0].name: Unknown trigger resource envoy.resource_monitors.cpu_utilization for overload action envoy.overload_actions.shrink_heap"},
		},
		"trigger on a broken monitor is not reported twice": {
			config: "resource_monitors: [{name: heap, typed_config: {\"@type\": " + heapURL + "}}]\nactions: [{name: envoy.overload_actions.shrink_heap, triggers: [{name: heap, threshold: {value: 0.5}}]}]",
			want:   []string{"resource_monitors[0].typed_config: fixed_heap: exactly one of max_heap_size_bytes or max_heap_size_bytes_runtime must be set"},
		},
		"duplicate trigger resource in the other spelling": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapTrigger + `, {name: proxy.resource_monitors.fixed_heap, threshold: {value: 0.5}}]}`),
			want: []string{"actions[0].triggers[1].name: Duplicate trigger resource proxy.resource_monitors.fixed_heap for overload action " +
				"envoy.overload_actions.shrink_heap (actions[0].triggers[0] names it already)"},
		},
		"trigger without kind": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap, triggers: [{name: envoy.resource_monitors.fixed_heap}]}`),
			want:   []string{"actions[0].triggers[0]: one of threshold or scaled is required"},
		},
		"threshold out of range": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 1.5}}]}`),
			want:   []string{"actions[0].triggers[0].threshold.value: must be inside range [0, 1]"},
		},
		"scaled thresholds in the wrong order": {
			config: monitorsAnd(`{name: envoy.overload_actions.disable_http_keepalive, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.9, saturation_threshold: 0.9}}]}`),
			want:   []string{"actions[0].triggers[0].scaled: scaling_threshold must be less than saturation_threshold"},
		},
		"scaled thresholds out of range": {
			config: monitorsAnd(`{name: envoy.overload_actions.disable_http_keepalive, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: -0.1, saturation_threshold: 2}}]}`),
			want: []string{
				"actions[0].triggers[0].scaled.scaling_threshold: must be inside range [0, 1]",
				"actions[0].triggers[0].scaled.saturation_threshold: must be inside range [0, 1]",
			},
		},
		"typed_config on an action that takes none": {
			config: monitorsAnd(`{name: envoy.overload_actions.stop_accepting_requests, triggers: [` + heapTrigger + `], typed_config: {"@type": ` + shrinkURL + `}}`),
			want:   []string{`actions[0].typed_config: Overload action "envoy.overload_actions.stop_accepting_requests" has an unexpected value for the typed_config field`},
		},
		"reduce_timeouts without config": {
			config: monitorsAnd(`{name: envoy.overload_actions.reduce_timeouts, triggers: [` + heapTrigger + `]}`),
			want:   []string{"actions[0].typed_config: required: a envoy.config.overload.v3.ScaleTimersOverloadActionConfig"},
		},
		"reduce_timeouts with the wrong config": {
			config: monitorsAnd(`{name: envoy.overload_actions.reduce_timeouts, triggers: [` + heapTrigger + `], typed_config: {"@type": ` + shrinkURL + `}}`),
			want:   []string{"actions[0].typed_config: must be a envoy.config.overload.v3.ScaleTimersOverloadActionConfig, not envoy.config.overload.v3.ShrinkHeapConfig"},
		},
		"reduce_timeouts with no timer": {
			config: monitorsAnd(`{name: envoy.overload_actions.reduce_timeouts, triggers: [` + heapTrigger + `], typed_config: {"@type": ` + timersURL + `}}`),
			want:   []string{"actions[0].typed_config.timer_scale_factors: at least one timer is required"},
		},
		"reduce_timeouts timers": {
			config: monitorsAnd(`{name: envoy.overload_actions.reduce_timeouts, triggers: [` + heapTrigger + `], typed_config: {"@type": ` + timersURL + `, timer_scale_factors: [
				{timer: TRANSPORT_SOCKET_CONNECT, min_timeout: 1s},
				{timer: HTTP_DOWNSTREAM_CONNECTION_MAX, min_scale: {value: 10}},
				{timer: HTTP_DOWNSTREAM_STREAM_IDLE, min_scale: {value: 10}},
				{timer: HTTP_DOWNSTREAM_STREAM_IDLE, min_timeout: 1s},
				{timer: HTTP_DOWNSTREAM_CONNECTION_IDLE},
				{timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_timeout: -1s},
				{timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_scale: {value: 150}}]}}`),
			want: []string{
				"actions[0].typed_config.timer_scale_factors[0].timer: TRANSPORT_SOCKET_CONNECT is not supported by Outrigger (supported: HTTP_DOWNSTREAM_CONNECTION_IDLE, HTTP_DOWNSTREAM_STREAM_IDLE)",
				"actions[0].typed_config.timer_scale_factors[1].timer: HTTP_DOWNSTREAM_CONNECTION_MAX is not supported by Outrigger (supported: HTTP_DOWNSTREAM_CONNECTION_IDLE, HTTP_DOWNSTREAM_STREAM_IDLE)",
				"actions[0].typed_config.timer_scale_factors[3].timer: Found duplicate entry for timer type HTTP_DOWNSTREAM_STREAM_IDLE",
				"actions[0].typed_config.timer_scale_factors[4]: one of min_timeout or min_scale is required",
				"actions[0].typed_config.timer_scale_factors[5].min_timeout: must not be negative",
				"actions[0].typed_config.timer_scale_factors[6].min_scale.value: must be inside range [0, 100]",
			},
		},
		"shrink_heap config": {
			config: monitorsAnd(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapTrigger + `], typed_config: {"@type": ` + shrinkURL + `, timer_interval: 0.5s, max_unfreed_memory_bytes: 100}}`),
			want: []string{
				"actions[0].typed_config.timer_interval: must be at least 1s (got 500ms)",
				"actions[0].typed_config.max_unfreed_memory_bytes: not supported by Outrigger (the Go runtime returns all the free memory it can at once)",
			},
		},
		"load shed points and buffer factory": {
			config: "resource_monitors: [" + heapMonitor + "]\nloadshed_points: [{name: envoy.load_shed_points.tcp_listener_accept, triggers: [" + heapTrigger + "]}]\nbuffer_factory_config: {minimum_account_to_track_power_of_two: 20}",
			want: []string{
				"loadshed_points: not supported by Outrigger",
				"buffer_factory_config: not supported by Outrigger",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(parseConfig(t, tc.config), Deps{Stats: stats.NewStore(), Log: logr.Discard()})
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewWithoutStore(t *testing.T) {
	if _, err := New(nil, Deps{}); err == nil {
		t.Fatal("New without a stat store succeeded")
	}
}

// TestNewStats: a configuration creates Envoy's stats at zero, named after
// the monitors and actions as configured (either spelling).
func TestNewStats(t *testing.T) {
	m, store := testManager(t, `
refresh_interval: 0.25s
resource_monitors:
- `+heapMonitor+`
- {name: proxy.resource_monitors.global_downstream_max_connections, typed_config: {"@type": `+connsURL+`, max_active_downstream_connections: 10}}
actions:
- {name: envoy.overload_actions.stop_accepting_connections, triggers: [`+heapTrigger+`]}
- {name: proxy.overload_actions.shrink_heap, triggers: [`+heapTrigger+`]}
`, nil, nil)
	wantGauges := []string{
		"overload.envoy.overload_actions.stop_accepting_connections.active",
		"overload.envoy.overload_actions.stop_accepting_connections.scale_percent",
		"overload.envoy.resource_monitors.fixed_heap.pressure",
		"overload.proxy.overload_actions.shrink_heap.active",
		"overload.proxy.overload_actions.shrink_heap.scale_percent",
		"overload.proxy.resource_monitors.global_downstream_max_connections.pressure",
	}
	wantCounters := []string{
		"overload.envoy.resource_monitors.fixed_heap.failed_updates",
		"overload.envoy.resource_monitors.fixed_heap.skipped_updates",
		"overload.proxy.overload_actions.shrink_heap.shrink_count",
		// The proactive resource has no pending updates to skip.
		"overload.proxy.resource_monitors.global_downstream_max_connections.failed_updates",
	}
	var gotGauges, gotCounters []string
	for _, n := range store.GaugeNames() {
		if strings.HasPrefix(n, "overload.") {
			gotGauges = append(gotGauges, n)
		}
	}
	for _, n := range store.CounterNames() {
		if strings.HasPrefix(n, "overload.") {
			gotCounters = append(gotCounters, n)
		}
	}
	slices.Sort(gotGauges)
	slices.Sort(gotCounters)
	if diff := cmp.Diff(wantGauges, gotGauges); diff != "" {
		t.Errorf("gauges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCounters, gotCounters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if m.refreshDelay != store.Histogram("overload.refresh_interval_delay") {
		t.Error("overload.refresh_interval_delay is not the refresh loop's histogram")
	}
}

// TestNewDefaults: the defaults are Envoy's.
func TestNewDefaults(t *testing.T) {
	m, _ := testManager(t, "resource_monitors: ["+heapMonitor+"]\nactions: [{name: envoy.overload_actions.shrink_heap, triggers: ["+heapTrigger+"]}]", nil, nil)
	if m.interval != time.Second || m.shrinkInterval != 10*time.Second {
		t.Errorf("refresh interval %s, shrink interval %s; want 1s and 10s", m.interval, m.shrinkInterval)
	}
	m, _ = testManager(t, "refresh_interval: 0.0105s\nresource_monitors: ["+heapMonitor+"]\nactions: [{name: envoy.overload_actions.shrink_heap, triggers: ["+heapTrigger+"], typed_config: {\"@type\": "+shrinkURL+", timer_interval: 2s}}]", nil, nil)
	if m.interval != 10*time.Millisecond || m.shrinkInterval != 2*time.Second {
		t.Errorf("refresh interval %s, shrink interval %s; want 10ms (whole milliseconds) and 2s", m.interval, m.shrinkInterval)
	}
}

// TestNewNil: no configuration, no overload stats.
func TestNewNil(t *testing.T) {
	store := stats.NewStore()
	m, err := New((*overloadv3.OverloadManager)(nil), Deps{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(store.GaugeNames(), store.CounterNames()...) {
		if strings.HasPrefix(n, "overload.") {
			t.Errorf("stat %s exists without configuration", n)
		}
	}
	if m.StopAcceptingRequests() || m.DisableKeepalive() || m.RejectConnection() {
		t.Error("an action is active without configuration")
	}
	if paused, _ := m.AcceptState(); paused {
		t.Error("accepting is paused without configuration")
	}
}
