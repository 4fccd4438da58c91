package httpconn

import (
	"fmt"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// The router's upstream_log, Envoy's UpstreamRequest::upstreamLog: access
// loggers run for each upstream request (attempt) of a request, retries
// and hedged attempts included, when the attempt ends (UpstreamEnd), and,
// with upstream_log_options, once it has its upstream connection
// (UpstreamPoolReady) and periodically while it runs (UpstreamPeriodic).
//
// An entry shows what Envoy's upstream request's own stream info holds:
// the attempt's start and duration, its host, cluster and upstream
// connection, the route, the downstream connection, the request headers
// as sent upstream, the upstream's response code and headers (0 and none
// when no response head came: a reset, a connection failure, a per-try
// timeout), the flags of the attempt's failure (UF, UC, UR, UT...), the
// body bytes sent to the upstream (%BYTES_SENT%) and received from it
// (%BYTES_RECEIVED%). What Envoy keeps in the downstream stream info only
// is left out, as in Envoy: %RESPONSE_CODE_DETAILS%, the request's last
// byte (%REQUEST_DURATION%), %UPSTREAM_REQUEST_ATTEMPT_COUNT% (0), the
// dynamic metadata and filter state, the trace.
//
// A connection manager whose router has no upstream_log never gets here:
// Manager.uplog is nil and every hook is one nil check of a pointer the
// stream or the manager has at hand.

// upstreamLogs are the router's compiled upstream_log and its options.
type upstreamLogs struct {
	list loggers.List
	// onStream: flush_upstream_log_on_upstream_stream.
	onStream bool
	// every: upstream_log_flush_interval; 0 for none.
	every time.Duration
}

// upstreamLogRouter is the router's configuration as far as upstream logs
// go (package router's terminal).
type upstreamLogRouter interface {
	UpstreamLog() httpfilter.UpstreamLog
}

// buildUpstreamLogs compiles the upstream_log of the router that ends
// http_filters; nil when it has none. Errors name the field path below
// the http_connection_manager.
func buildUpstreamLogs(cfg *hcmv3.HttpConnectionManager, fc *filterChain, deps Deps) (*upstreamLogs, error) {
	u := fc.upstreamLog
	if len(u.Loggers) == 0 {
		return nil, nil
	}
	path := fmt.Sprintf("http_filters[%d].typed_config.upstream_log", len(cfg.GetHttpFilters())-1)
	list, err := loggers.Compile(path, u.Loggers, loggers.Context{
		Registry: deps.Extensions,
		ByName:   lookupByName(deps.Runtime),
		Sink:     deps.AccessLogs,
		Filter:   logfilter.Context{Runtime: deps.Runtime},
	})
	if err != nil {
		_ = list.Close()
		return nil, err
	}
	return &upstreamLogs{list: list, onStream: u.FlushOnUpstreamStream, every: u.FlushInterval}, nil
}

// close closes the upstream loggers; nil has none.
func (u *upstreamLogs) close() error {
	if u == nil {
		return nil
	}
	return u.list.Close()
}

// readsUpstreamConnection reports whether an upstream logger may read the
// entry's upstream connection; nil reads nothing.
func (u *upstreamLogs) readsUpstreamConnection() bool {
	return u != nil && u.list.ReadsUpstreamConnection()
}

// attemptLog is what the upstream log of the stream's current attempt
// records beside the stream; made on the stream's first attempt and kept
// with it.
type attemptLog struct {
	m *Manager
	// start is when the attempt began (stamped).
	start time.Time
	// code is the upstream's response status, after the upstream
	// filters; 0 until a head came.
	code int
	// flags are the attempt's failure flags that the stream does not
	// keep (those of an attempt that is retried).
	flags accesslog.ResponseFlags
	// resp holds the head of a response that is retried, which the
	// stream forgets before the attempt ends; kept says it does.
	resp headerList
	kept bool
	buf  []byte

	// periodic logs the attempt's UpstreamPeriodic entries
	// (upstream_log_flush_interval) from its timer's goroutine, with
	// what the stream publishes at the attempt's start and response
	// head; nil without the option.
	periodic *periodicLog
}

// beginAttemptLog starts the upstream log of an attempt, after
// beginAttempt recorded its host.
func (s *stream) beginAttemptLog() {
	a := s.ulog
	if a == nil {
		a = &attemptLog{m: s.m}
		s.ulog = a
	}
	a.start = s.m.stamp(time.Now())
	a.code, a.flags, a.kept = 0, 0, false
	if s.m.uplog.every > 0 {
		s.startAttemptPeriodic()
	}
}

// attemptEntry is the entry of the current attempt now, for the reason t.
func (s *stream) attemptEntry(t datav3.AccessLogType) accesslog.Entry {
	a := s.ulog
	e := accesslog.Entry{
		StartTime:                      a.start,
		Method:                         s.entry.Method,
		Path:                           s.entry.Path,
		Authority:                      s.entry.Authority,
		Scheme:                         s.entry.Scheme,
		Protocol:                       s.attemptProtocol(),
		RequestHeaders:                 &s.reqHeaders,
		ResponseCode:                   a.code,
		ResponseFlags:                  a.flags | s.flags&(upstreamFailure|accesslog.UpstreamOverflow),
		Duration:                       s.m.stamp(time.Now()).Sub(a.start),
		UpstreamHost:                   s.entry.UpstreamHost,
		UpstreamCluster:                s.entry.UpstreamCluster,
		UpstreamLocalAddress:           s.entry.UpstreamLocalAddress,
		UpstreamTransportFailureReason: s.entry.UpstreamTransportFailureReason,
		DownstreamRemoteAddress:        s.entry.DownstreamRemoteAddress,
		DownstreamLocalAddress:         s.entry.DownstreamLocalAddress,
		RequestedServerName:            s.entry.RequestedServerName,
		TLS:                            s.entry.TLS,
		UpstreamTLS:                    s.entry.UpstreamTLS,
		ConnectionID:                   s.entry.ConnectionID,
		RouteName:                      s.entry.RouteName,
		FilterChainName:                s.entry.FilterChainName,
		Type:                           t,
		HealthCheck:                    s.entry.HealthCheck,
		ClusterMetadata:                s.entry.ClusterMetadata,
		UpstreamHostMetadata:           s.entry.UpstreamHostMetadata,
		RouteMetadata:                  s.entry.RouteMetadata,
		VirtualHostMetadata:            s.entry.VirtualHostMetadata,
		ListenerMetadata:               s.entry.ListenerMetadata,
	}
	switch {
	case a.kept:
		e.ResponseHeaders = &a.resp
	case a.code != 0:
		// The response relayed: what came from the upstream is what
		// went downstream.
		e.ResponseHeaders = &s.respHeaders
		e.FirstUpstreamByte = s.entry.FirstUpstreamByte
	}
	if t == datav3.AccessLogType_UpstreamEnd {
		// The byte counts only once the attempt is over: until then an
		// HTTP/2 upstream's transport may be reading the request body,
		// counting it. What the other entries show is 0, as in Envoy
		// when the attempt has its connection.
		e.BytesSent = s.bytesRecv
		if a.code != 0 && !a.kept {
			e.BytesReceived = s.bytesSent
		}
	}
	return e
}

// attemptProtocol is the protocol of the attempt's upstream exchange, as
// %PROTOCOL% shows it in Envoy's upstream logs.
func (s *stream) attemptProtocol() string {
	if s.cluster != nil && s.cluster.HTTP2For(s.proto == protoHTTP2) {
		return protoHTTP2
	}
	return protoHTTP11
}

// logAttempt logs the current attempt's entry for the reason t.
func (s *stream) logAttempt(t datav3.AccessLogType) {
	a := s.ulog
	e := s.attemptEntry(t)
	var err error
	if a.buf, err = s.m.uplog.list.Log(a.buf, &e); err != nil {
		s.m.log.V(1).Info("upstream log write failed", "error", err.Error())
	}
}

// endAttemptLog logs the end of the attempt on host (UpstreamEnd): the
// host of a hedged attempt need not be the last one picked.
func (s *stream) endAttemptLog(host string) {
	if s.m.uplog.every > 0 {
		s.stopAttemptPeriodic()
	}
	a := s.ulog
	last, code := s.entry.UpstreamHost, a.code
	if host != last && !a.kept {
		// A hedged attempt that lost the race to another host's: the
		// response recorded is the winner's, not its own.
		a.code = 0
	}
	s.entry.UpstreamHost = host
	s.logAttempt(datav3.AccessLogType_UpstreamEnd)
	s.entry.UpstreamHost, a.code = last, code
	a.kept = false
}

// poolReadyLog logs the attempt's UpstreamPoolReady entry, once it has its
// upstream connection, when flush_upstream_log_on_upstream_stream asks
// for it.
func (s *stream) poolReadyLog() {
	if s.m.uplog.onStream && s.ulog != nil {
		s.logAttempt(datav3.AccessLogType_UpstreamPoolReady)
	}
}

// attemptHead records the upstream's response status for the attempt's
// log, once the upstream filters saw the head.
func (s *stream) attemptHead() {
	a := s.ulog
	a.code = s.status
	if s.m.uplog.every > 0 {
		s.publishAttempt()
	}
}

// attemptRetried records, for the attempt's log, a response head that is
// retried (status, its fields in s.respHeaders, which the stream drops).
func (s *stream) attemptRetried(status int) {
	a := s.ulog
	a.code = status
	a.resp.copyOf(&s.respHeaders)
	a.kept = true
}

// attemptReset records why an attempt that is retried failed, as Envoy's
// upstream request flags its reset.
func (s *stream) attemptReset(reason resetReason) {
	var f accesslog.ResponseFlags
	switch reason {
	case resetConnectFailure:
		f = accesslog.UpstreamConnectionFailure
	case resetRemote:
		f = accesslog.UpstreamConnectionTermination
	case resetRefusedStream:
		f = accesslog.UpstreamRemoteReset
	case resetPerTryTimeout:
		f = accesslog.UpstreamRequestTimeout
	}
	s.ulog.flags |= f
}

// startAttemptPeriodic arms the attempt's periodic entries.
func (s *stream) startAttemptPeriodic() {
	a := s.ulog
	if a.periodic == nil {
		a.periodic = &periodicLog{m: s.m, logs: &s.m.uplog.list, typ: datav3.AccessLogType_UpstreamPeriodic}
	}
	s.publishAttempt()
	a.periodic.arm(s.m.uplog.every)
}

// stopAttemptPeriodic disarms them once the attempt ends.
func (s *stream) stopAttemptPeriodic() { s.ulog.periodic.disarm() }

// publishAttempt gives the periodic entries the attempt's state now: a
// copy that the stream's later edits do not touch. The byte counts stay
// 0, as the pool-ready entry's (see attemptEntry).
func (s *stream) publishAttempt() {
	p := s.ulog.periodic
	e := s.attemptEntry(datav3.AccessLogType_UpstreamPeriodic)
	p.mu.Lock()
	defer p.mu.Unlock()
	detachStrings(&e)
	p.req.copyOf(&s.reqHeaders)
	e.RequestHeaders = &p.req
	// The response's headers are the final entry's.
	e.ResponseHeaders = nil
	p.entry = e
}

// upgradeUpstreamLog refuses upstream_log on the router of an upgrade's
// own filter chain (filter index i of field): the upstream logs follow
// http_filters' router, whatever the chain.
func upgradeUpstreamLog(field string, i int, fc *filterChain) error {
	if len(fc.upstreamLog.Loggers) == 0 {
		return nil
	}
	return fmt.Errorf("%s[%d].typed_config.upstream_log: not supported by Outrigger in an upgrade's filter chain", field, i)
}
