// Package eventsink names the health check event sinks Outrigger has
// (Envoy's envoy.health_check.event_sinks category): the file sink, which
// appends each event to a file as one JSON line. The checker writes the
// lines itself (package healthcheck), as it does for event_log_path, since
// Envoy's file sink writes the same JSON; this package is its entry in the
// extension registry, kept apart so that the registry does not import the
// checker.
package eventsink

// FileName is the file sink, in the proxy. spelling of Envoy's
// envoy.health_check.event_sinks.file.
const FileName = "proxy.health_check.event_sinks.file"

// Category is Envoy's category of health check event sinks.
const Category = "envoy.health_check.event_sinks"

// File is the registry's entry for the file sink.
type File struct{}
