package httpconn

import (
	"errors"
	"fmt"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
)

// buildAccessLogs compiles access_log with the access loggers of the
// extension registry. Errors name the field path below the
// http_connection_manager.
func buildAccessLogs(cfgs []*accesslogv3.AccessLog, deps Deps) (loggers.List, error) {
	return loggers.Compile("access_log", cfgs, loggers.Context{
		Registry: deps.Extensions,
		ByName:   lookupByName(deps.Runtime),
		Sink:     deps.AccessLogs,
		Filter:   logfilter.Context{Runtime: deps.Runtime},
	})
}

// logOptions are access_log_options: the entries logged besides the one of
// a finished request (DownstreamEnd).
type logOptions struct {
	// flushInterval logs each active stream that often
	// (DownstreamPeriodic); 0 never.
	flushInterval time.Duration
	// onNewRequest logs a stream once its request headers are decoded
	// and its route chosen, before the HTTP filters run
	// (DownstreamStart).
	onNewRequest bool
	// onTunnel logs a stream once its upgrade or CONNECT tunnel is
	// established (DownstreamTunnelSuccessfullyEstablished).
	onTunnel bool
}

// readLogOptions reads access_log_options, or the deprecated top-level
// fields it replaced; as in Envoy, setting both forms is an error.
func readLogOptions(cfg *hcmv3.HttpConnectionManager) (logOptions, error) {
	var o logOptions
	//lint:ignore SA1019 Envoy still honours the deprecated fields without access_log_options.
	oldInterval, oldOnNew := cfg.GetAccessLogFlushInterval(), cfg.GetFlushAccessLogOnNewRequest()
	interval := oldInterval
	o.onNewRequest = oldOnNew
	if opts := cfg.GetAccessLogOptions(); opts != nil {
		switch {
		case oldOnNew:
			return o, errors.New("flush_access_log_on_new_request: only one of flush_access_log_on_new_request or access_log_options can be specified")
		case oldInterval != nil:
			return o, errors.New("access_log_flush_interval: only one of access_log_flush_interval or access_log_options can be specified")
		}
		interval = opts.GetAccessLogFlushInterval()
		o.onNewRequest = opts.GetFlushAccessLogOnNewRequest()
		o.onTunnel = opts.GetFlushLogOnTunnelSuccessfullyEstablished()
	}
	if interval != nil {
		path := "access_log_options.access_log_flush_interval"
		if cfg.GetAccessLogOptions() == nil {
			path = "access_log_flush_interval"
		}
		d, err := duration(interval)
		if err == nil && d < time.Millisecond {
			err = fmt.Errorf("must be at least 1ms, got %v", d)
		}
		if err != nil {
			return o, fmt.Errorf("%s: %w", path, err)
		}
		o.flushInterval = d
	}
	return o, nil
}

// logNow logs the stream as it is now, for the reason t, with the
// connection manager's access loggers: the entries besides the final
// one, logged from the stream's own goroutine.
func (s *stream) logNow(t datav3.AccessLogType) {
	m := s.m
	if m.logs.Empty() {
		return
	}
	e := s.entry
	s.fillEntry(&e, m.stamp(time.Now()))
	e.Type = t
	if e.RouteName == "" && s.cached != nil {
		// The route is chosen before the filters run, as Envoy
		// chooses it before its start entry.
		e.RouteName = s.cached.Name
	}
	var err error
	if s.logBuf, err = m.logs.Log(s.logBuf, &e); err != nil {
		m.log.V(1).Info("access log write failed", "error", err.Error())
	}
}

// fillEntry records in e what the stream knows now: the response's
// status, flags, sizes and headers (once sent), and the duration so far.
func (s *stream) fillEntry(e *accesslog.Entry, now time.Time) {
	e.ResponseCode = s.status
	e.ResponseCodeDetails = s.details
	e.ResponseFlags = s.flags
	e.BytesReceived = s.bytesRecv
	e.BytesSent = s.bytesSent
	e.Duration = now.Sub(s.start)
	if s.started {
		e.ResponseHeaders = &s.respHeaders
	}
	switch {
	case s.span != nil:
		e.TraceID, e.SpanID = s.span.Trace, s.span.ID
	case s.spanCtx.Valid:
		e.TraceID, e.SpanID = s.spanCtx.Trace, s.spanCtx.ID
	}
}
