package admin

import (
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
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
