package bootstrap

import (
	"regexp"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// fieldSupport qualifies one supported field.
type fieldSupport struct {
	// values, for an enum field, lists the only values Outrigger implements
	// (nil: all of them).
	values []string
	// category, for a typed_config (Any) field, is the extension category
	// its type must belong to.
	category string
	// categories are more categories a typed_config may belong to
	// (TypedExtensionConfig serves several).
	categories []string
	// types, for a typed_config (Any) field that takes configuration
	// messages rather than extensions, lists the message types it takes.
	types []protoreflect.FullName
	// byName, for a typed_config, allows an empty one ({}): the extension
	// is then found by the name beside it, as Envoy finds it.
	byName bool
	// perFilter, for a typed_per_filter_config value, takes the per-route
	// configuration of an HTTP filter that has one, possibly wrapped in
	// an envoy.config.route.v3.FilterConfig (see perFilterConfig).
	perFilter bool
	// plugin, for a ClusterSpecifierPlugin, leaves out an optional one
	// Outrigger does not have (see clusterSpecifierPlugin).
	plugin bool
	// firstOfCategory, for load_balancing_policy.policies, checks only
	// the first policy whose typed_config is an enabled extension of this
	// category: Envoy uses that one and skips the others (the cluster
	// builder refuses a list without one).
	firstOfCategory string
	// sinkValues, for an enum field, lists values allowed in addition to
	// values inside stats_sinks: a statsd address says UDP, which no
	// listener, admin or cluster address may.
	sinkValues []string
	// listenerValues, for an enum field, lists values allowed in addition
	// to values on a listener's own addresses: a UDP listener's address
	// says UDP (see listenerAddressPath).
	listenerValues []string
	// only, when set, limits the field to the paths it matches; elsewhere
	// it is refused, with onlyWhere saying where it is implemented.
	only      *regexp.Regexp
	onlyWhere string
	// data, for an Any field, says it holds a value rather than
	// configuration (a typed metadata value): any type, kept as given,
	// nothing inside checked.
	data bool
}

// supportedCore lists, one line per field, the bootstrap-level configuration
// fields Outrigger implements (the other areas have their own tables in
// support_*.go), by the field's full name (message full name + "." +
// field name). A populated field missing from this table is reported as not
// supported; google.protobuf values (Struct, Duration...) are leaves and
// their contents are not checked here. Extend it one line at a time as
// features land. It is an immutable table: never written after init.
var supportedCore = map[protoreflect.FullName]fieldSupport{
	// Bootstrap.
	"envoy.config.bootstrap.v3.Bootstrap.node":             {},
	"envoy.config.bootstrap.v3.Bootstrap.static_resources": {},
	"envoy.config.bootstrap.v3.Bootstrap.admin":            {},
	// Only the internal_listener extension (server/internal_listeners.go).
	"envoy.config.bootstrap.v3.Bootstrap.bootstrap_extensions":                        {},
	"envoy.extensions.bootstrap.internal_listener.v3.InternalListener.buffer_size_kb": {},
	"envoy.config.bootstrap.v3.Bootstrap.layered_runtime":                             {},
	"envoy.config.bootstrap.v3.Bootstrap.stats_flush_interval":                        {},
	"envoy.config.bootstrap.v3.Bootstrap.stats_flush_on_admin":                        {},
	// Go's regexp, an RE2 engine, is the one engine (see builtin).
	"envoy.config.bootstrap.v3.Bootstrap.default_regex_engine": {},
	// The main-thread watchdog (watchdog.go); what it cannot do is refused
	// there.
	"envoy.config.bootstrap.v3.Bootstrap.watchdog":               {},
	"envoy.config.bootstrap.v3.Bootstrap.watchdogs":              {},
	"envoy.config.bootstrap.v3.Watchdogs.main_thread_watchdog":   {},
	"envoy.config.bootstrap.v3.Watchdogs.worker_watchdog":        {},
	"envoy.config.bootstrap.v3.Watchdog.miss_timeout":            {},
	"envoy.config.bootstrap.v3.Watchdog.megamiss_timeout":        {},
	"envoy.config.bootstrap.v3.Watchdog.kill_timeout":            {},
	"envoy.config.bootstrap.v3.Watchdog.max_kill_timeout_jitter": {},
	"envoy.config.bootstrap.v3.Watchdog.multikill_timeout":       {},
	"envoy.config.bootstrap.v3.Watchdog.multikill_threshold":     {},
	// The format of the proxy's own log records (applog.go).
	"envoy.config.bootstrap.v3.Bootstrap.application_log_config":                     {},
	"envoy.config.bootstrap.v3.Bootstrap.ApplicationLogConfig.log_format":            {},
	"envoy.config.bootstrap.v3.Bootstrap.ApplicationLogConfig.LogFormat.json_format": {},
	"envoy.config.bootstrap.v3.Bootstrap.ApplicationLogConfig.LogFormat.text_format": {},

	// Node.
	"envoy.config.core.v3.Node.id":              {},
	"envoy.config.core.v3.Node.cluster":         {},
	"envoy.config.core.v3.Node.metadata":        {},
	"envoy.config.core.v3.Node.locality":        {},
	"envoy.config.core.v3.Node.user_agent_name": {},
	// Envoy keeps a user_agent_build_version with a version, replaces
	// a user_agent_version, appends its extensions to these, and sends
	// the rest to the control plane as written (server/info.go).
	"envoy.config.core.v3.Node.user_agent_version":       {},
	"envoy.config.core.v3.Node.user_agent_build_version": {},
	"envoy.config.core.v3.Node.extensions":               {},
	"envoy.config.core.v3.Node.client_features":          {},
	"envoy.config.core.v3.Node.listening_addresses":      {},
	"envoy.config.core.v3.Node.dynamic_parameters":       {},
	"envoy.config.core.v3.BuildVersion.version":          {},
	"envoy.config.core.v3.BuildVersion.metadata":         {},
	"envoy.config.core.v3.Extension.name":                {},
	"envoy.config.core.v3.Extension.category":            {},
	"envoy.config.core.v3.Extension.type_descriptor":     {},
	"envoy.config.core.v3.Extension.version":             {},
	"envoy.config.core.v3.Extension.disabled":            {},
	"envoy.config.core.v3.Extension.type_urls":           {},
	"envoy.type.v3.SemanticVersion.major_number":         {},
	"envoy.type.v3.SemanticVersion.minor_number":         {},
	"envoy.type.v3.SemanticVersion.patch":                {},
	"envoy.config.core.v3.Locality.region":               {},
	"envoy.config.core.v3.Locality.zone":                 {},
	"envoy.config.core.v3.Locality.sub_zone":             {},

	// Admin.
	"envoy.config.bootstrap.v3.Admin.address":         {},
	"envoy.config.bootstrap.v3.Admin.access_log_path": {},
	"envoy.config.bootstrap.v3.Admin.access_log":      {},
	"envoy.config.bootstrap.v3.Admin.profile_path":    {},
	// Applied by the admin listener (server/admin_config.go).
	"envoy.config.bootstrap.v3.Admin.allow_paths":              {},
	"envoy.config.bootstrap.v3.Admin.socket_options":           {},
	"envoy.config.bootstrap.v3.Admin.ignore_global_conn_limit": {},

	// Addresses.
	"envoy.config.core.v3.Address.socket_address":    {},
	"envoy.config.core.v3.SocketAddress.address":     {},
	"envoy.config.core.v3.SocketAddress.port_value":  {},
	"envoy.config.core.v3.SocketAddress.protocol":    {values: []string{"TCP"}, sinkValues: []string{"UDP"}, listenerValues: []string{"UDP"}},
	"envoy.config.core.v3.SocketAddress.ipv4_compat": {},
	// Pipes (unix domain sockets): the admin interface's address and the
	// endpoints of STATIC clusters (static or discovered), as Contour's
	// bootstrap uses them; not listeners, EDS or other addresses yet.
	"envoy.config.core.v3.Address.pipe": {only: pipePaths, onlyWhere: "admin.address and STATIC clusters' load_assignment endpoints"},
	"envoy.config.core.v3.Pipe.path":    {},
	// Internal addresses: the endpoints of STATIC clusters, connected to
	// the internal listener they name in memory.
	"envoy.config.core.v3.Address.envoy_internal_address":            {only: internalPaths, onlyWhere: "STATIC clusters' load_assignment endpoints"},
	"envoy.config.core.v3.EnvoyInternalAddress.server_listener_name": {},
	"envoy.config.core.v3.EnvoyInternalAddress.endpoint_id":          {},
	"envoy.config.core.v3.Pipe.mode":                                 {},

	// Runtime.
	"envoy.config.bootstrap.v3.LayeredRuntime.layers":                         {},
	"envoy.config.bootstrap.v3.RuntimeLayer.name":                             {},
	"envoy.config.bootstrap.v3.RuntimeLayer.static_layer":                     {},
	"envoy.config.bootstrap.v3.RuntimeLayer.disk_layer":                       {},
	"envoy.config.bootstrap.v3.RuntimeLayer.admin_layer":                      {},
	"envoy.config.bootstrap.v3.RuntimeLayer.DiskLayer.symlink_root":           {},
	"envoy.config.bootstrap.v3.RuntimeLayer.DiskLayer.subdirectory":           {},
	"envoy.config.bootstrap.v3.RuntimeLayer.DiskLayer.append_service_cluster": {},
	// RTDS: a layer from a management server (server/runtime_discovery.go).
	"envoy.config.bootstrap.v3.RuntimeLayer.rtds_layer":            {},
	"envoy.config.bootstrap.v3.RuntimeLayer.RtdsLayer.name":        {},
	"envoy.config.bootstrap.v3.RuntimeLayer.RtdsLayer.rtds_config": {},
}

// pipePaths are where an Address may be a pipe: the admin address, and a
// cluster's load_assignment endpoints (a static cluster, or one
// discovered, whose paths start at the cluster).
var pipePaths = regexp.MustCompile(`^(admin\.address|(static_resources\.clusters\[\d+\]\.)?load_assignment\.endpoints\[\d+\]\.lb_endpoints\[\d+\]\.endpoint\.address)\.pipe$`)

// internalPaths are where an Address may be an envoy_internal_address: a
// cluster's load_assignment endpoints.
var internalPaths = regexp.MustCompile(`^(static_resources\.clusters\[\d+\]\.)?load_assignment\.endpoints\[\d+\]\.lb_endpoints\[\d+\]\.endpoint\.address\.envoy_internal_address$`)
