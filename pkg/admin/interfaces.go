package admin

import (
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The admin package never imports the proxy. Each endpoint family declares
// here the narrow view of the server it needs; pkg/proxy/server satisfies
// them and cmd/sidecar wires them together. Tests use small fakes.

// ServerInfoSource reports the server's identity and lifecycle state.
type ServerInfoSource interface {
	// ServerInfo returns a freshly built ServerInfo message (version, state,
	// uptimes, hot restart version, command line options, node).
	ServerInfo() *adminv3.ServerInfo
	// State returns the current lifecycle state; /ready answers 200 only for
	// adminv3.ServerInfo_LIVE.
	State() adminv3.ServerInfo_State
}

// HealthControl backs /healthcheck/fail and /healthcheck/ok.
type HealthControl interface {
	// FailHealthChecks makes inbound health checks fail and moves the server
	// to DRAINING.
	FailHealthChecks()
	// PassHealthChecks negates FailHealthChecks.
	PassHealthChecks()
}

// Quitter backs /quitquitquit: it starts a clean shutdown and returns at once.
type Quitter interface {
	Quit()
}

// MemorySource backs /memory.
type MemorySource interface {
	Memory() *adminv3.Memory
}

// CertSource backs /certs.
type CertSource interface {
	Certificates() *adminv3.Certificates
}

// RuntimeEntry is one key of the layered runtime as /runtime shows it.
type RuntimeEntry struct {
	Key         string
	LayerValues []string // one per layer, in layer order; "" where the layer lacks the key
	FinalValue  string
}

// RuntimeStore backs /runtime and /runtime_modify.
type RuntimeStore interface {
	// LayerNames returns the layer names in override order.
	LayerNames() []string
	// Entries returns every key, sorted by key.
	Entries() []RuntimeEntry
	// HasAdminLayer reports whether an admin layer is configured;
	// /runtime_modify answers 503 without one.
	HasAdminLayer() bool
	// Modify merges the pairs into the admin layer; an empty value deletes
	// a key previously set there. It applies all pairs or none.
	Modify(pairs map[string]string) error
}

// LoggerLevel is one logger and its level name, as /logging lists it.
type LoggerLevel struct {
	Name  string
	Level string
}

// LogControl backs /logging and /reopen_logs.
type LogControl interface {
	// Loggers lists the loggers in registry order (component loggers, or
	// source files under fine-grain logging).
	Loggers() []LoggerLevel
	// FineGrain reports whether fine-grain (per-file) logging is on; then
	// logger names are file paths or globs and unknown names are not errors.
	FineGrain() bool
	// SetLevels sets several loggers at once. The caller has validated the
	// level names; an unknown logger name (outside fine-grain mode) fails the
	// whole call with nothing changed.
	SetLevels(levels map[string]string) error
	// SetAllLevels sets every logger (and the fine-grain default).
	SetAllLevels(level string) error
	// ReopenLogs reopens the application log file and every access log.
	ReopenLogs() error
}

// StatsSource backs the /stats family (/stats, /stats/prometheus,
// /stats/recentlookups and its mutations, /reset_counters).
type StatsSource interface {
	// Store is the server's stat store; the admin renders from it directly
	// (pkg/proxy/stats is a leaf library the admin may import).
	Store() *stats.Store
	// FlushForAdmin runs a stats flush (sinks included) when the bootstrap
	// sets stats_flush_on_admin, and does nothing otherwise. The stats
	// endpoints call it before rendering.
	FlushForAdmin()
	// FilterUsesRE2 reports the runtime key
	// proxy.reloadable_features.admin_stats_filter_use_re2 (default true):
	// true selects Go's regexp (RE2) for ?filter=, false the ECMAScript
	// engine.
	FilterUsesRE2() bool
}

// BreakerEventSource backs /breaker_event_stream (and its alias
// /hystrix_event_stream): the circuit-breaker dashboard sink's stream.
type BreakerEventSource interface {
	// SubscribeBreakerEvents registers one stream client. Each stats flush
	// delivers one event set on the channel, already formatted as
	// text/event-stream data; cancel unregisters the client and frees all
	// it held (the channel is then never sent to again). A client that
	// does not keep up misses event sets rather than blocking the flush.
	SubscribeBreakerEvents() (events <-chan []byte, cancel func())
}

// ConfigDumpSource backs /config_dump and /init_dump.
type ConfigDumpSource interface {
	// ConfigDump returns the dumps in Envoy's order (bootstrap, clusters,
	// endpoints when includeEDS, listeners, scoped routes, routes,
	// secrets), each an envoy.admin.v3.*ConfigDump message. Secrets are not
	// redacted here: the admin redacts private_key and password.
	ConfigDump(includeEDS bool) []proto.Message
	// InitDump returns the targets that have not finished initializing.
	InitDump() *adminv3.UnreadyTargetsDumps
}

// ClusterSource backs /clusters.
type ClusterSource interface {
	// Clusters returns every cluster with its hosts, their per-host stats,
	// health flags and circuit-breaker settings. Both the text and the
	// JSON forms of /clusters are rendered from it.
	Clusters() *adminv3.Clusters
	// IsCanary reports whether the host at address in the named cluster is
	// a canary. The text form shows each host's canary flag, for which the
	// Clusters message has no field.
	IsCanary(cluster string, address *corev3.Address) bool
	// Outlier returns the outlier-detection figures of the named cluster
	// that the text form prints (the Clusters message lacks the
	// averages), and false when the cluster has no outlier detection.
	Outlier(cluster string) (OutlierSummary, bool)
}

// OutlierSummary is a cluster's success-rate figures of the last outlier
// detection interval, each -1 when not computed.
type OutlierSummary struct {
	SuccessRateAverage                      float64
	SuccessRateEjectionThreshold            float64
	LocalOriginSuccessRateAverage           float64
	LocalOriginSuccessRateEjectionThreshold float64
}

// ListenerSource backs /listeners.
type ListenerSource interface {
	// Listeners returns the active listeners with their bound addresses
	// (the OS-chosen port where the configuration said 0).
	Listeners() *adminv3.Listeners
}

// DrainOptions are the parameters of /drain_listeners.
type DrainOptions struct {
	// InboundOnly limits the drain to listeners with traffic_direction
	// INBOUND.
	InboundOnly bool
	// Graceful runs the drain sequence for --drain-time-s with
	// --drain-strategy before the listeners stop.
	Graceful bool
	// SkipExit keeps the server running after the drain sequence.
	SkipExit bool
}

// DrainControl backs /drain_listeners.
type DrainControl interface {
	// DrainListeners starts draining the selected listeners and returns
	// without waiting for the drain sequence to end.
	DrainListeners(o DrainOptions) error
}
