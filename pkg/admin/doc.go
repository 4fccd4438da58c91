// Package admin serves the proxy's administration interface: a loopback HTTP
// server that lets an operator query the proxy (server information,
// readiness, runtime values, memory, certificates, contention) and change it
// (log levels, runtime overrides, health-check failure, profilers, exit).
//
// Everything hangs off one route table. Each endpoint family lives in its own
// file and contributes its routes (path, help text, parameters, whether it
// mutates state, handler); the home page `/` and the `/help` text are
// generated from that table, and the dispatcher, not the handlers, enforces
// the rules every endpoint shares: path normalization and exact matching,
// POST-only mutations (anything else gets 400, as the specification demands),
// query and form-body parameter parsing, and the common response headers.
// Handlers answer through one central writer, [Response].
//
// The package never imports the proxy. It declares the narrow views of the
// server it needs (see interfaces.go); pkg/proxy/server implements them and
// cmd/sidecar wires them into [Options].
package admin
