package bootstrap

import (
	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// overloadActionConfigs are the messages an overload action's typed_config
// takes: reduce_timeouts' and shrink_heap's (pkg/proxy/overload checks
// which action takes which).
var overloadActionConfigs = []protoreflect.FullName{
	proto.MessageName(&overloadv3.ScaleTimersOverloadActionConfig{}),
	proto.MessageName(&overloadv3.ShrinkHeapConfig{}),
}

// supportedOverload lists the overload manager fields Outrigger implements,
// and the listener fields of connection limits and balancing (see
// supportedCore). loadshed_points, buffer_factory_config, the other
// monitors and ShrinkHeapConfig.max_unfreed_memory_bytes are left out, so
// they are refused with their path.
var supportedOverload = map[protoreflect.FullName]fieldSupport{
	// Bootstrap.
	"envoy.config.bootstrap.v3.Bootstrap.overload_manager": {},

	// The manager, its monitors, triggers and actions.
	"envoy.config.overload.v3.OverloadManager.refresh_interval":                    {},
	"envoy.config.overload.v3.OverloadManager.resource_monitors":                   {},
	"envoy.config.overload.v3.OverloadManager.actions":                             {},
	"envoy.config.overload.v3.ResourceMonitor.name":                                {},
	"envoy.config.overload.v3.ResourceMonitor.typed_config":                        {category: "envoy.resource_monitors"},
	"envoy.config.overload.v3.OverloadAction.name":                                 {},
	"envoy.config.overload.v3.OverloadAction.triggers":                             {},
	"envoy.config.overload.v3.OverloadAction.typed_config":                         {types: overloadActionConfigs},
	"envoy.config.overload.v3.Trigger.name":                                        {},
	"envoy.config.overload.v3.Trigger.threshold":                                   {},
	"envoy.config.overload.v3.Trigger.scaled":                                      {},
	"envoy.config.overload.v3.ThresholdTrigger.value":                              {},
	"envoy.config.overload.v3.ScaledTrigger.scaling_threshold":                     {},
	"envoy.config.overload.v3.ScaledTrigger.saturation_threshold":                  {},
	"envoy.config.overload.v3.ShrinkHeapConfig.timer_interval":                     {},
	"envoy.config.overload.v3.ScaleTimersOverloadActionConfig.timer_scale_factors": {},
	"envoy.config.overload.v3.ScaleTimersOverloadActionConfig.ScaleTimer.timer": {
		values: []string{"HTTP_DOWNSTREAM_CONNECTION_IDLE", "HTTP_DOWNSTREAM_STREAM_IDLE"},
	},
	"envoy.config.overload.v3.ScaleTimersOverloadActionConfig.ScaleTimer.min_timeout": {},
	// min_scale is an envoy.type.v3.Percent, listed with the clusters'.
	"envoy.config.overload.v3.ScaleTimersOverloadActionConfig.ScaleTimer.min_scale": {},

	// The monitors' configurations.
	"envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig.max_heap_size_bytes":                                       {},
	"envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig.max_heap_size_bytes_runtime":                               {},
	"envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig.filename":                                    {},
	"envoy.extensions.resource_monitors.cgroup_memory.v3.CgroupMemoryConfig.max_memory_bytes":                                    {},
	"envoy.extensions.resource_monitors.cpu_utilization.v3.CpuUtilizationConfig.mode":                                            {values: []string{"HOST", "CONTAINER"}},
	"envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig.max_active_downstream_connections": {},
	// fixed_heap's max_heap_size_bytes_runtime is the one RuntimeUInt64.
	"envoy.config.core.v3.RuntimeUInt64.default_value": {},
	"envoy.config.core.v3.RuntimeUInt64.runtime_key":   {},

	// Listener connection limits and balancing.
	"envoy.config.listener.v3.Listener.ignore_global_conn_limit":              {},
	"envoy.config.listener.v3.Listener.connection_balance_config":             {},
	"envoy.config.listener.v3.Listener.ConnectionBalanceConfig.exact_balance": {},
}
