package httpfilter

import (
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
)

// UpstreamLog is the router's upstream_log with its upstream_log_options:
// the access loggers run for each upstream request (attempt) rather than
// for the downstream request. The router's configuration hands it to the
// connection manager (its UpstreamLog method), which compiles the loggers
// and runs them.
type UpstreamLog struct {
	// Loggers are upstream_log, as configured; the connection manager
	// compiles them (the access loggers need the server's sinks).
	Loggers []*accesslogv3.AccessLog
	// FlushOnUpstreamStream is flush_upstream_log_on_upstream_stream: an
	// entry (UpstreamPoolReady) once the attempt has its upstream
	// connection.
	FlushOnUpstreamStream bool
	// FlushInterval is upstream_log_flush_interval: an entry
	// (UpstreamPeriodic) that often while the attempt is active; 0 for
	// none. The validation rules make it at least 1ms.
	FlushInterval time.Duration
}

// UpstreamLogOf reads the upstream logs of a router's configuration.
func UpstreamLogOf(cfg *routerv3.Router) UpstreamLog {
	o := cfg.GetUpstreamLogOptions()
	u := UpstreamLog{
		Loggers:               cfg.GetUpstreamLog(),
		FlushOnUpstreamStream: o.GetFlushUpstreamLogOnUpstreamStream(),
	}
	if d := o.GetUpstreamLogFlushInterval(); d != nil {
		u.FlushInterval = d.AsDuration()
	}
	return u
}
