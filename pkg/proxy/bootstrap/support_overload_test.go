package bootstrap

import "testing"

// Type URLs of the overload manager's configurations.
const (
	heapMonitorURL  = "type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig"
	connsMonitorURL = "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig"
	scaleTimersURL  = "type.googleapis.com/envoy.config.overload.v3.ScaleTimersOverloadActionConfig"
	shrinkHeapURL   = "type.googleapis.com/envoy.config.overload.v3.ShrinkHeapConfig"

	// heapMonitorYAML is a valid fixed_heap monitor.
	heapMonitorYAML = `{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": ` + heapMonitorURL + `, max_heap_size_bytes: 1073741824}}`
	// heapThreshold is a trigger on it.
	heapThreshold = `{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.95}}`
)

// overloadYAML is an overload_manager with the fixed_heap monitor and the
// given actions.
func overloadYAML(actions string) string {
	return "overload_manager: {resource_monitors: [" + heapMonitorYAML + "], actions: [" + actions + "]}"
}

// TestValidateOverload: every overload manager field in the support table
// validates, in both spellings of the names.
func TestValidateOverload(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"every supported field": {overlay: `
overload_manager:
  refresh_interval: 0.25s
  resource_monitors:
  - ` + heapMonitorYAML + `
  - name: proxy.resource_monitors.global_downstream_max_connections
    typed_config: {"@type": ` + connsMonitorURL + `, max_active_downstream_connections: 1000}
  actions:
  - {name: envoy.overload_actions.stop_accepting_requests, triggers: [` + heapThreshold + `]}
  - {name: proxy.overload_actions.disable_http_keepalive, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.8, saturation_threshold: 0.95}}]}
  - {name: envoy.overload_actions.stop_accepting_connections, triggers: [{name: proxy.resource_monitors.global_downstream_max_connections, threshold: {value: 0.9}}]}
  - {name: envoy.overload_actions.reject_incoming_connections, triggers: [` + heapThreshold + `]}
  - name: envoy.overload_actions.reduce_timeouts
    triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.85, saturation_threshold: 0.95}}]
    typed_config:
      "@type": ` + scaleTimersURL + `
      timer_scale_factors:
      - {timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_timeout: 2s}
      - {timer: HTTP_DOWNSTREAM_STREAM_IDLE, min_scale: {value: 10}}
  - name: envoy.overload_actions.shrink_heap
    triggers: [` + heapThreshold + `]
    typed_config: {"@type": ` + shrinkHeapURL + `, timer_interval: 5s}
`},
		"shrink_heap without config": {overlay: overloadYAML(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapThreshold + `]}`)},
		"listener limits and balance": {overlay: listenerYAML("ignore_global_conn_limit: true, connection_balance_config: {exact_balance: {}},",
			`{name: hcm, typed_config: {"@type": `+hcmURL+`, stat_prefix: extra, `+okRouteCfg+`, http_filters: [`+routerFilter+`]}}`)},
	})
}

func TestValidateOverloadSupport(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"another monitor": {
			overlay: `overload_manager: {resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}`,
			want:    []string{`overload_manager.resource_monitors[0].typed_config: extension "proxy.filters.http.router" (category envoy.filters.http) cannot be used here: expected category envoy.resource_monitors`},
		},
		"heap size from the runtime": {
			overlay: `overload_manager: {resource_monitors: [{name: heap, typed_config: {"@type": ` + heapMonitorURL + `, max_heap_size_bytes_runtime: {default_value: 1, runtime_key: k}}}]}`,
		},
		"injected resource": {
			overlay: `overload_manager: {resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": type.googleapis.com/envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig, filename: /tmp/pressure}}]}`,
		},
		"disabled monitor": {
			overlay: `overload_manager: {resource_monitors: [` + heapMonitorYAML + `]}`,
			disable: []string{"envoy.resource_monitors/envoy.resource_monitors.fixed_heap"},
			want:    []string{`overload_manager.resource_monitors[0].typed_config: extension "proxy.resource_monitors.fixed_heap" is disabled by --disable-extensions`},
		},
		"load shed points and buffer factory": {
			overlay: `overload_manager: {resource_monitors: [` + heapMonitorYAML + `], loadshed_points: [{name: envoy.load_shed_points.tcp_listener_accept, triggers: [` + heapThreshold + `]}], buffer_factory_config: {minimum_account_to_track_power_of_two: 20}}`,
			want: []string{
				"overload_manager.loadshed_points: not supported by Outrigger",
				"overload_manager.buffer_factory_config: not supported by Outrigger",
			},
		},
		"another timer": {
			overlay: overloadYAML(`{name: envoy.overload_actions.reduce_timeouts, triggers: [` + heapThreshold + `], typed_config: {"@type": ` + scaleTimersURL + `, timer_scale_factors: [{timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_timeout: 1s}, {timer: TRANSPORT_SOCKET_CONNECT, min_timeout: 1s}]}}`),
			want:    []string{"overload_manager.actions[0].typed_config.timer_scale_factors[1].timer: TRANSPORT_SOCKET_CONNECT is not supported by Outrigger (supported: HTTP_DOWNSTREAM_CONNECTION_IDLE, HTTP_DOWNSTREAM_STREAM_IDLE)"},
		},
		"action config of another type": {
			overlay: overloadYAML(`{name: envoy.overload_actions.reduce_timeouts, triggers: [` + heapThreshold + `], typed_config: {"@type": ` + heapMonitorURL + `, max_heap_size_bytes: 1}}`),
			want: []string{`overload_manager.actions[0].typed_config: type "envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig" is not supported here ` +
				`(supported: envoy.config.overload.v3.ScaleTimersOverloadActionConfig, envoy.config.overload.v3.ShrinkHeapConfig)`},
		},
		"action config without type": {
			overlay: overloadYAML(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapThreshold + `], typed_config: {}}`),
			want:    []string{`overload_manager.actions[0].typed_config: missing type ("@type")`},
		},
		"max unfreed memory": {
			overlay: overloadYAML(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapThreshold + `], typed_config: {"@type": ` + shrinkHeapURL + `, max_unfreed_memory_bytes: 1}}`),
			want:    []string{"overload_manager.actions[0].typed_config.max_unfreed_memory_bytes: not supported by Outrigger"},
		},
		// The constraints of the API inside typed_config are checked too.
		"constraints inside the action config": {
			overlay: overloadYAML(`{name: envoy.overload_actions.shrink_heap, triggers: [` + heapThreshold + `], typed_config: {"@type": ` + shrinkHeapURL + `, timer_interval: 0.5s}}`),
			want:    []string{"overload_manager.actions[0].typed_config.timer_interval: value must be greater than or equal to 1s"},
		},
		"constraints of the manager": {
			overlay: `overload_manager: {resource_monitors: [], actions: [{name: x, triggers: [{name: z, threshold: {value: 2}}]}]}`,
			want: []string{
				"overload_manager.resource_monitors: value must contain at least 1 item(s)",
				"overload_manager.actions[0].triggers[0].threshold.value: value must be inside range [0, 1]",
			},
		},
		"other balancers": {
			overlay: listenerYAML("connection_balance_config: {extend_balance: {name: x, typed_config: {\"@type\": "+routerURL+"}}},",
				`{name: hcm, typed_config: {"@type": `+hcmURL+`, stat_prefix: extra, `+okRouteCfg+`, http_filters: [`+routerFilter+`]}}`),
			want: []string{"static_resources.listeners[1].connection_balance_config.extend_balance: not supported by Outrigger"},
		},
	})
}
