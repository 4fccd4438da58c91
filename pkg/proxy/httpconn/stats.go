package httpconn

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// hcmStats are the connection manager's and its router filter's stats
// under "http.<stat_prefix>.", with Envoy's names. They are looked up once
// in New; the request path only touches the pointers.
type hcmStats struct {
	cxTotal           *stats.Counter
	cxActive          *stats.Gauge
	cxDestroy         *stats.Counter
	cxDestroyLocal    *stats.Counter
	cxDestroyRemote   *stats.Counter
	cxDestroyActiveRq *stats.Counter
	// cxDestroyLocalActiveRq and cxDestroyRemoteActiveRq split it by
	// who closed the connection.
	cxDestroyLocalActiveRq, cxDestroyRemoteActiveRq *stats.Counter
	cxHTTP1Total                                    *stats.Counter
	cxHTTP1Active                                   *stats.Gauge
	cxHTTP2Total                                    *stats.Counter
	cxHTTP2Active                                   *stats.Gauge
	cxDrainClose                                    *stats.Counter
	cxIdleTimeout                                   *stats.Counter
	cxMaxRequests                                   *stats.Counter
	cxProtocolError                                 *stats.Counter
	cxRxBytes                                       *stats.Counter
	cxTxBytes                                       *stats.Counter
	cxLengthMs                                      *stats.Histogram
	rqTotal                                         *stats.Counter
	rqActive                                        *stats.Gauge
	rqHTTP1Total                                    *stats.Counter
	rqHTTP2Total                                    *stats.Counter
	rqCompleted                                     *stats.Counter
	rqRxReset                                       *stats.Counter
	rqTxReset                                       *stats.Counter
	rqTimeout                                       *stats.Counter
	rqHeaderTimeout                                 *stats.Counter
	rqIdleTimeout                                   *stats.Counter
	// rqMaxDuration counts streams max_stream_duration ended.
	rqMaxDuration *stats.Counter
	rqTooLarge    *stats.Counter
	// rqTooManyPrematureResets counts HTTP/2 connections closed for
	// resetting too many streams early.
	rqTooManyPrematureResets *stats.Counter
	rqNonRelativePath        *stats.Counter
	rqRejectedViaIPDetection *stats.Counter
	// Requests normalize_path or the escaped slashes action refused, and
	// those UNESCAPE_AND_REDIRECT redirected.
	rqFailedPathNormalization  *stats.Counter
	rqRedirectedNormalizedPath *stats.Counter
	rqTime                     *stats.Histogram
	rqClass                    [5]*stats.Counter
	noRoute                    *stats.Counter
	noCluster                  *stats.Counter
	rqDirectResponse           *stats.Counter
	rqRedirect                 *stats.Counter
	routerRqTotal              *stats.Counter
	rqResetAfterStart          *stats.Counter
	// redirects are the internal redirects passed through.
	redirects *redirectStats
	// listener is the per-listener copy; nil for a manager built without
	// a listener (Deps.ListenerStatPrefix empty).
	listener *listenerHTTPStats

	// cxMaxDuration counts connections max_connection_duration ended.
	cxMaxDuration *stats.Counter
	// cxDelayedCloseTimeout counts connections closed because the client
	// did not close within delayed_close_timeout.
	cxDelayedCloseTimeout *stats.Counter

	// The overload manager's actions: requests refused by
	// stop_accepting_requests, connections closed by
	// disable_http_keepalive.
	rqOverloadClose            *stats.Counter
	cxOverloadDisableKeepalive *stats.Counter
	// upgrades are the upgrade stats.
	upgrades *upgradeStats

	// Tracing decisions (Envoy's "tracing.*" connection manager stats);
	// health_check is kept at zero, as the decision is taken before the
	// health_check filter runs, in Envoy too.
	tracingRandomSampling *stats.Counter
	tracingServiceForced  *stats.Counter
	tracingClientEnabled  *stats.Counter
	tracingNotTraceable   *stats.Counter
	tracingHealthCheck    *stats.Counter
}

// newHCMStats creates every stat up front, as Envoy does, so that they show
// (as zeros) before the first request. listenerPrefix is the scope of the
// listener the manager serves ("listener.127.0.0.1_10000."), empty for
// none.
func newHCMStats(st *stats.Store, prefix, listenerPrefix string) *hcmStats {
	sc := st.Scope("http." + prefix + ".")
	s := &hcmStats{
		cxTotal:                  sc.Counter("downstream_cx_total"),
		cxActive:                 sc.Gauge("downstream_cx_active"),
		cxDestroy:                sc.Counter("downstream_cx_destroy"),
		cxDestroyLocal:           sc.Counter("downstream_cx_destroy_local"),
		cxDestroyRemote:          sc.Counter("downstream_cx_destroy_remote"),
		cxDestroyActiveRq:        sc.Counter("downstream_cx_destroy_active_rq"),
		cxDestroyLocalActiveRq:   sc.Counter("downstream_cx_destroy_local_active_rq"),
		cxDestroyRemoteActiveRq:  sc.Counter("downstream_cx_destroy_remote_active_rq"),
		cxHTTP1Total:             sc.Counter("downstream_cx_http1_total"),
		cxHTTP1Active:            sc.Gauge("downstream_cx_http1_active"),
		cxHTTP2Total:             sc.Counter("downstream_cx_http2_total"),
		cxHTTP2Active:            sc.Gauge("downstream_cx_http2_active"),
		cxDrainClose:             sc.Counter("downstream_cx_drain_close"),
		cxIdleTimeout:            sc.Counter("downstream_cx_idle_timeout"),
		cxMaxRequests:            sc.Counter("downstream_cx_max_requests_reached"),
		cxProtocolError:          sc.Counter("downstream_cx_protocol_error"),
		cxRxBytes:                sc.Counter("downstream_cx_rx_bytes_total"),
		cxTxBytes:                sc.Counter("downstream_cx_tx_bytes_total"),
		cxLengthMs:               sc.Histogram("downstream_cx_length_ms", stats.UnitMilliseconds),
		rqTotal:                  sc.Counter("downstream_rq_total"),
		rqActive:                 sc.Gauge("downstream_rq_active"),
		rqHTTP1Total:             sc.Counter("downstream_rq_http1_total"),
		rqHTTP2Total:             sc.Counter("downstream_rq_http2_total"),
		rqCompleted:              sc.Counter("downstream_rq_completed"),
		rqRxReset:                sc.Counter("downstream_rq_rx_reset"),
		rqTxReset:                sc.Counter("downstream_rq_tx_reset"),
		rqTimeout:                sc.Counter("downstream_rq_timeout"),
		rqHeaderTimeout:          sc.Counter("downstream_rq_header_timeout"),
		rqIdleTimeout:            sc.Counter("downstream_rq_idle_timeout"),
		rqTooLarge:               sc.Counter("downstream_rq_too_large"),
		rqTooManyPrematureResets: sc.Counter("downstream_rq_too_many_premature_resets"),
		rqNonRelativePath:        sc.Counter("downstream_rq_non_relative_path"),
		rqRejectedViaIPDetection: sc.Counter("downstream_rq_rejected_via_ip_detection"),
		rqTime:                   sc.Histogram("downstream_rq_time", stats.UnitMilliseconds),
		noRoute:                  sc.Counter("no_route"),
		noCluster:                sc.Counter("no_cluster"),
		rqDirectResponse:         sc.Counter("rq_direct_response"),
		rqRedirect:               sc.Counter("rq_redirect"),
		routerRqTotal:            sc.Counter("rq_total"),
		rqResetAfterStart:        sc.Counter("rq_reset_after_downstream_response_started"),
	}
	s.rqFailedPathNormalization = sc.Counter("downstream_rq_failed_path_normalization")
	s.rqRedirectedNormalizedPath = sc.Counter("downstream_rq_redirected_with_normalized_path")
	s.cxMaxDuration = sc.Counter("downstream_cx_max_duration_reached")
	s.rqMaxDuration = sc.Counter("downstream_rq_max_duration_reached")
	s.cxDelayedCloseTimeout = sc.Counter("downstream_cx_delayed_close_timeout")
	s.rqOverloadClose = sc.Counter("downstream_rq_overload_close")
	s.cxOverloadDisableKeepalive = sc.Counter("downstream_cx_overload_disable_keepalive")
	s.upgrades = newUpgradeStats(sc)
	s.redirects = newRedirectStats(sc)
	s.tracingRandomSampling = sc.Counter("tracing.random_sampling")
	s.tracingServiceForced = sc.Counter("tracing.service_forced")
	s.tracingClientEnabled = sc.Counter("tracing.client_enabled")
	s.tracingNotTraceable = sc.Counter("tracing.not_traceable")
	s.tracingHealthCheck = sc.Counter("tracing.health_check")
	for i := range s.rqClass {
		s.rqClass[i] = sc.Counter("downstream_rq_" + string(rune('1'+i)) + "xx")
	}
	if listenerPrefix != "" {
		s.listener = newListenerHTTPStats(st.Scope(listenerPrefix + "http." + prefix + "."))
	}
	return s
}

// recordStatus counts a response status in its class.
func (s *hcmStats) recordStatus(code int) {
	if code >= 100 && code < 600 {
		s.rqClass[code/100-1].Inc()
	}
}

// recordInterim counts an interim 100 Continue sent to the client as
// Envoy's chargeStats does for every response head it encodes: in
// downstream_rq_1xx and downstream_rq_completed, of the connection manager
// and of the listener; the final response counts again when the stream
// ends.
func (s *hcmStats) recordInterim() {
	s.rqClass[0].Inc()
	s.rqCompleted.Inc()
	s.listener.recordEnd(100)
}

// listenerHTTPStats are Envoy's per-listener copies of some connection
// manager stats (CONN_MAN_LISTENER_STATS), under
// "listener.<address>.http.<stat_prefix>.": with several connection
// managers sharing a stat_prefix across listeners, they tell the listeners'
// responses apart, which "http.<stat_prefix>." cannot.
type listenerHTTPStats struct {
	rqClass     [5]*stats.Counter
	rqCompleted *stats.Counter
}

// newListenerHTTPStats creates the per-listener stats in sc, the
// "listener.<address>.http.<stat_prefix>." scope.
func newListenerHTTPStats(sc stats.Scope) *listenerHTTPStats {
	s := &listenerHTTPStats{rqCompleted: sc.Counter("downstream_rq_completed")}
	for i := range s.rqClass {
		s.rqClass[i] = sc.Counter("downstream_rq_" + string(rune('1'+i)) + "xx")
	}
	return s
}

// recordEnd counts a finished stream's response status in its class and
// the stream as completed, as recordStatus and rqCompleted do for
// "http.<stat_prefix>.". The class comes first, so that a reader who saw
// downstream_rq_completed move also sees the class. A nil s (no listener)
// counts nothing, so the stream's end needs no branch of its own.
func (s *listenerHTTPStats) recordEnd(code int) {
	if s == nil {
		return
	}
	if code >= 100 && code < 600 {
		s.rqClass[code/100-1].Inc()
	}
	s.rqCompleted.Inc()
}
