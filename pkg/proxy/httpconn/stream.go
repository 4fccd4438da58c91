package httpconn

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// The %PROTOCOL% values.
const (
	protoHTTP10 = "HTTP/1.0"
	protoHTTP11 = "HTTP/1.1"
	protoHTTP2  = "HTTP/2"
)

// downstream is the client side of a stream as the filters and the router
// answer it: HTTP/1 over the connection's own codec, or an HTTP/2 stream.
type downstream interface {
	// writeHead sends the response head: s.status and s.respHeaders,
	// then the framing of a body of n bytes (-1: unknown), or of no body
	// when hasBody is false (n is then the Content-Length to announce,
	// as for HEAD).
	writeHead(s *stream, n int64, hasBody bool) error
	// writeBody sends body bytes.
	writeBody(p []byte) error
	// writeBodyString sends the body of a local reply, held in a string;
	// writeHead announced its length.
	writeBodyString(p string) error
	// finish ends the body and sends what is buffered.
	finish() error
	// abort ends the response as broken: what is buffered is dropped and
	// the client must see an incomplete message.
	abort()
	// flush sends what is buffered, before the stream waits.
	flush() error
	// continue100 sends 100 Continue if the client waits for it.
	continue100() error
	// awaitBody waits until request body bytes have arrived, under the
	// body's read deadlines, while an upstream that was sent Expect:
	// 100-continue may answer first. An error, or a body that cannot
	// come, is left for the body's reader to find. cancelAwait, called
	// from another goroutine, makes a pending or later awaitBody return
	// at once; endAwait undoes it once that goroutine is done.
	awaitBody() error
	cancelAwait()
	endAwait()
	// abandonBody, on the stream's goroutine, gives up the rest of the
	// request body while another goroutine may be reading it: a read
	// waiting for the client returns an error at once, and so do later
	// ones once nothing buffered is left.
	abandonBody()
	// trailers sends response trailers after the body; HTTP/1 drops
	// them, as Envoy does unless enable_trailers is set.
	trailers(t http.Header)
	// requestTrailers returns the trailers that ended the request body,
	// nil when none came or they are not carried (HTTP/1 without
	// enable_trailers); asked once the body has been read to its end.
	requestTrailers() http.Header
	// touch tells of activity at now: idle deadlines move back.
	touch(now time.Time)
	// gone reports, without waiting, whether the client has gone: the
	// connection closed or reset, or the HTTP/2 stream reset.
	gone() bool
}

// bodySource is a request body as the router reads it: pieces valid until
// the next call, then io.EOF.
type bodySource interface {
	Next() ([]byte, error)
}

// stream is one request and its response, from the first request byte to
// the last response byte. An HTTP/1 connection reuses one stream for all
// its requests; each HTTP/2 stream has its own.
type stream struct {
	m *Manager
	// up is the upstream scratch space; flushDown flushes the
	// downstream's buffered output (bound once, so handing it to a body
	// reader allocates nothing).
	up        *upstreamScratch
	flushDown func() error
	// conn is the HTTP/1 connection the stream belongs to; nil for
	// HTTP/2 streams.
	conn *serverConn
	// The downstream connection's identity.
	connID   uint64
	remote   string
	remoteIP string
	local    string
	direct   string
	tls      *accesslog.TLSInfo
	sni      string
	// ja3 and ja4 are the connection's ClientHello fingerprints.
	ja3, ja4 string
	chain    string // the listener's filter chain (%FILTER_CHAIN_NAME%)
	// origDst is the connection's original destination when a listener
	// restored it (an ORIGINAL_DST cluster's host); pick is the load
	// balancer's view of the request, kept here so that a pick
	// allocates nothing.
	origDst netip.AddrPort
	// connSource is the upstream source of the connection's requests
	// (the original_src listener filter's), upSource the request's (the
	// original_src HTTP filter may set its own); an invalid Addr is none.
	connSource, upSource upstream.Source
	// override is the host a filter asked for by address (stateful
	// sessions), Address "" for none.
	override upstream.OverrideHost
	// connUpCtx is the connection's upstream context, carrying the
	// downstream side a cluster's upstream PROXY header describes (nil:
	// none; see Manager.proxyProtocolState).
	connUpCtx context.Context
	pick      upstream.PickContext
	// setCookies are the cookies the route's hash policy generated for
	// the pick (a cookie entry with a ttl the request lacked): the
	// upstream's response carries them as Set-Cookie, as Envoy's router
	// adds them.
	setCookies []string

	// start is the recorded start; t0 the real time it began, and tLast
	// the latest real time read since (socket deadlines use real time).
	start time.Time
	t0    time.Time
	tLast time.Time
	// upSent is when the request of the attempt whose response is
	// relayed went upstream (StreamInfo.UpstreamRequestSent); zero
	// before a response comes from upstream.
	upSent time.Time
	// The stream's maximum durations (see duration.go): durationEnd is
	// max_stream_duration's deadline (the connection manager's or the
	// route's), durationTimer whether one was ever armed, upDurationEnd
	// the cluster's; the zero time is none. durationFired records that
	// one of them ended the stream.
	durationEnd   time.Time
	durationTimer bool
	upDurationEnd time.Time
	durationFired bool
	// The request, as views of the request head (see view).
	proto     string
	method    string
	path      string
	authority string
	scheme    string
	isHead    bool
	// keepAlive: the client lets the connection carry another request.
	keepAlive  bool
	reqHeaders headerList
	// cases are the preserve_case formatter's spellings of the
	// request's and response's field names (preserve_case.go).
	cases caseNotes
	// Request body: reqLength is its Content-Length, -1 without one;
	// reqChunked means a body of unknown length follows; body reads it
	// (nil when there is none).
	reqLength  int64
	reqChunked bool
	expect100  bool
	// teTrailers: the client said "te: trailers" (gRPC does), which an
	// HTTP/2 upstream is told too.
	teTrailers bool
	body       bodySource
	// bodyDone reports whether the request body was read to its end
	// (set by requestEnded).
	bodyDone bool
	// leaked is set when another goroutine may still read the request
	// body (an HTTP/2 upstream transport that never let go of it): the
	// buffers it reads from must then not be recycled.
	leaked bool
	// upstream is the HTTP/1 upstream connection of the exchange in
	// flight and upCancel (guarded by upMu) cancels an HTTP/2 one, so
	// that a reset stream or a forced shutdown can interrupt them from
	// another goroutine (see armReset).
	upstream atomic.Pointer[upstream.Conn]
	upMu     sync.Mutex
	upCancel context.CancelFunc
	// resetCtx is the context an HTTP/2 client's request waits for an
	// HTTP/1.1 upstream connection under (see forwardHTTP1).
	resetCtx lazyResetCtx
	// peerReset: the HTTP/2 client reset the stream.
	peerReset atomic.Bool
	// peerClosed: the HTTP/1 client closed its connection while the
	// stream waited on its upstream (set by the manager's sweep, see
	// awaitsweep.go); goneRecorded: the stream accounted for it.
	peerClosed   atomic.Bool
	goneRecorded bool
	// wake, once a filter has slept, is the channel interrupt signals so
	// that the sleep ends (see Sleep); abandoned records that a filter's
	// sleep ended the stream without a response.
	wake      atomic.Pointer[chan struct{}]
	abandoned bool
	// connState is the state filters keep per downstream connection;
	// netState its network filters' filter state (nil: none).
	connState *connState
	netState  netfilter.FilterStater
	// clientGone reports whether an HTTP/1.1 client closed its
	// connection (a peek at its socket); nil for HTTP/2 streams, whose
	// resets are seen as they come.
	clientGone func() bool

	// active are the request's filters, made by decodeFilters; kept for
	// the response's encoding.
	active []httpfilter.Filter
	// upFilters are the upstream filters of the attempt in progress,
	// made by decodeUpstream, kept for its response and destroyed when
	// it ends (see upstream_filters.go).
	upFilters []httpfilter.Filter
	// upAnswering is the upstream filter whose local reply is being
	// sent: it edits the reply's head (see upstreamStream.SendLocalReply).
	upAnswering httpfilter.Filter
	// attemptSrc is the request body in front of which the attempt's
	// upstream filters buffered it, nil when they did not (see
	// upstream_body.go).
	attemptSrc bodySource
	// upAnswered: the attempt's upstream filters answered the request
	// themselves, so the attempt sends nothing.
	upAnswered bool
	// upReq is the request as the upstream filters see it; upXform are
	// the decoders they asked for, and upXbody the attempt's body that
	// runs them (see upstream_body.go); heldLength and heldChunked are
	// the request body's framing before the attempt changed it.
	upReq       router.Request
	upXform     []httpfilter.DataDecoder
	upXbody     *decodingBody
	heldLength  int64
	heldChunked bool
	// The filters' body transformers (see transform.go), the wrappers
	// that run them, the response body's framing as the filters see it,
	// and the state the request's filters share.
	reqXform  []httpfilter.DataDecoder
	respXform []httpfilter.DataEncoder
	xbody     *decodingBody
	// sources are the chains a SourceDecoder started during its
	// filter's DecodeHeaders (StartRequestSource), innermost first.
	sources []*decodingBody
	// reqDecl is the request body length a filter declared (see
	// body_length.go).
	reqDecl     declaredLength
	xdown       encodingDown
	respLength  int64
	respHasBody bool
	// replaced: a filter put a response of its own in place of the one
	// being encoded (ReplaceResponse); its body is respLength long.
	replaced bool
	state    []stateEntry
	// bodyErr is the error a filter refused the request body with, for
	// the HTTP/2 upstream path, where another goroutine reads the body.
	bodyErr atomic.Pointer[httpfilter.BodyError]

	// Routing. cached is the route the filters see, matched on first use
	// (routed) with its cluster picked (clusterName, wc the weighted
	// cluster's index or -1); route is the one the router took.
	rreq   router.Request
	routed bool
	cached *router.Route
	// rt is the route table the request uses, read on first use: a
	// route discovery update applies to the requests that start after.
	rt          *routeState
	clusterName string
	wc          int
	route       *router.Route
	// upPath and upAuthority are what goes upstream after rewrites.
	upPath      string
	upAuthority string
	// rqTimeout is the route timeout of the request: the route's, or
	// the one max_grpc_timeout draws from a gRPC request's grpc-timeout.
	rqTimeout time.Duration
	cluster   UpstreamCluster
	host      *upstream.Host
	// clPolicies are the route policies of cluster's HTTP protocol
	// options, which replace the route's (see cluster_policies.go); nil
	// when it has none.
	clPolicies *router.ClusterPolicies
	// upg is the upgrade the request asks for, if any.
	upg upgradeState
	// attemptCountInResponse: the response carries x-envoy-attempt-count
	// (the virtual host's include_attempt_count_in_response, once the
	// request is on its way to a host).
	attemptCountInResponse bool
	// retry is the request's retry state (see retry.go).
	retry retryState
	// redir is the request's internal redirect state (see
	// internal_redirect.go).
	redir redirectState
	// vcStats and rtStats are the request's virtual cluster's and
	// route's stats, nil when it has none (see selectRouteStats).
	vcStats, rtStats *routeStats

	// The response.
	down        downstream
	status      int
	respHeaders headerList
	// respTrailers are an HTTP/2 upstream's response trailers, nil when
	// none came (read by tracing's gRPC tags).
	respTrailers http.Header
	started      bool
	// closeConn: the connection closes after this response.
	closeConn bool
	// drainClose: closeConn because the listener drains.
	drainClose bool
	flags      accesslog.ResponseFlags
	details    string
	// produced: the whole response body is in hand (the upstream's has
	// ended, or the reply is local), so a write that waits on the
	// client's flow control waits under the flush timeout rather than
	// the stream idle timeout (stream.flushTimeout).
	produced bool
	// writeTimedOut is which timeout ended a write to an HTTP/2 client
	// that did not open its window (see downstreamFailed).
	writeTimedOut writeTimeout
	// resolution counts the route resolutions for
	// record_route_resolution_stats.
	resolution routeResolution
	bytesSent  uint64
	bytesRecv  uint64
	// track is the current attempt's track_cluster_stats state (see
	// tracked_stats.go).
	track trackedTry

	// Tracing: the request's span (nil when not traced, or without a
	// tracer), the upstream request's child span, the trace reason, and
	// the route decorator's operation while it is to be propagated.
	span               *tracing.Span
	child              *tracing.Span
	traceReason        traceReason
	decorated          string
	decoratedPropagate bool
	// traceHeaders are the tracing's request headers, found once when
	// the span starts.
	traceHeaders startHeaders
	// copied notes the names of the request's fields copied from the
	// HTTP/1 parser, for the tracing's start.
	copied copiedFields
	// localSpan is where a tracer may start the request's span when it
	// is not sampled, rather than in a pooled one.
	localSpan tracing.Span
	// spanCtx is the request's span when it was started as a bare
	// context (tracing.ContextDriver): valid while it is to be
	// propagated, span then nil.
	spanCtx tracing.SpanContext

	entry accesslog.Entry
	// plog logs the stream periodically (access_log_flush_interval),
	// made on first use and kept with the stream; plogArmed while it
	// does.
	plog      *periodicLog
	plogArmed bool
	// ulog is the upstream log of the current attempt (the router's
	// upstream_log, see uplog.go), made on first use; nil without.
	ulog *attemptLog
	// Scratch buffers behind header values the stream sets; each is
	// rewritten only by the next request.
	idBuf []byte
	// genID is the request id this proxy generated into idBuf, for the
	// tracing's sampling.
	genID          generatedID
	xffBuf         []byte
	numBuf         []byte
	svcTimeBuf     []byte
	attemptBuf     []byte
	attemptRespBuf []byte
	viaReqBuf      []byte
	viaRespBuf     []byte
	upLocalBuf     []byte
	// grpcTimeoutBuf holds the grpc-timeout a route rewrites.
	grpcTimeoutBuf []byte
	logBuf         []byte
	// tagBuf holds span tags' values: appended to while a span is
	// tagged (tagSince), as the span may borrow them until it finishes.
	tagBuf []byte
}

// begin resets the stream for a new request whose first byte arrived at
// real.
func (s *stream) begin(real time.Time, proto string) {
	now := s.m.stamp(real)
	s.start, s.t0, s.tLast = now, real, real
	s.upSent = time.Time{}
	s.armDuration(real)
	s.proto = proto
	s.method, s.path, s.authority, s.scheme = "", "", "", "http"
	if s.tls != nil {
		// The scheme of a request on a TLS connection, as Envoy's
		// HTTP/1 codec sets it (HTTP/2 clients send theirs).
		s.scheme = "https"
	}
	s.isHead, s.keepAlive, s.expect100, s.reqChunked, s.bodyDone, s.leaked = false, false, false, false, false, false
	s.teTrailers = false
	s.cases.reqOn, s.cases.respOn = false, false
	s.peerReset.Store(false)
	s.peerClosed.Store(false)
	s.goneRecorded = false
	s.reqLength = -1
	s.body = nil
	s.reqHeaders.reset()
	s.rreq = router.Request{}
	clear(s.active)
	s.active = s.active[:0]
	s.route, s.cluster, s.host, s.clPolicies = nil, nil, nil, nil
	s.attemptSrc, s.upXbody = nil, nil
	// end destroyed them; a panic that skipped end leaves them be.
	clear(s.upFilters)
	s.upFilters = s.upFilters[:0]
	s.upXform = s.upXform[:0]
	if s.conn != nil {
		// An HTTP/1 connection's next request: x-forwarded-for made the
		// previous request's client the downstream's (see forward.go);
		// this one starts again from the connection's.
		s.remoteIP = s.conn.remoteIP
	}
	s.upSource = s.connSource
	s.override = upstream.OverrideHost{}
	clear(s.setCookies)
	s.setCookies = s.setCookies[:0]
	s.attemptCountInResponse = false
	s.retry.reset()
	s.redir.reset()
	s.vcStats, s.rtStats = nil, nil
	s.track.stats = nil
	s.routed, s.cached, s.clusterName, s.wc = false, nil, "", -1
	// A stream always ends (end) before it begins again; a panic that
	// skipped end must not keep its table for ever.
	s.releaseRoutes()
	s.abandoned = false
	s.upg = upgradeState{}
	s.upPath, s.upAuthority, s.rqTimeout = "", "", 0
	s.status, s.started, s.closeConn, s.drainClose = 0, false, false, false
	s.respHeaders.reset()
	s.respLength, s.respHasBody, s.replaced = 0, false, false
	s.bodyErr.Store(nil)
	s.respTrailers = nil
	s.flags, s.details = 0, ""
	s.bytesSent, s.bytesRecv, s.produced, s.writeTimedOut, s.resolution = 0, 0, false, writeNotTimedOut, routeResolution{}
	s.span, s.child, s.traceReason, s.decorated, s.decoratedPropagate = nil, nil, notTraceable, "", false
	s.spanCtx.Valid = false
	s.entry = accesslog.Entry{
		StartTime:               now,
		Protocol:                proto,
		DownstreamRemoteAddress: s.remote,
		DownstreamLocalAddress:  s.local,
		ConnectionID:            s.connID,
		RequestedServerName:     s.sni,
		TLSJA3Fingerprint:       s.ja3,
		TLSJA4Fingerprint:       s.ja4,
		FilterChainName:         s.chain,
		TLS:                     s.tls,
		RequestHeaders:          &s.reqHeaders,
		ListenerMetadata:        s.m.deps.ListenerMetadata,
		Type:                    datav3.AccessLogType_DownstreamEnd,
	}
	if s.netState != nil {
		// %FILTER_STATE% reads through to the connection's.
		s.entry.ConnFilterState = s.netState
	}
	st := s.m.stats
	st.rqTotal.Inc()
	st.rqActive.Inc()
	if proto == protoHTTP2 {
		st.rqHTTP2Total.Inc()
	} else {
		st.rqHTTP1Total.Inc()
	}
}

// interrupt stops the upstream exchange in flight, if any: a blocked read
// of an HTTP/1 upstream fails at once, an HTTP/2 one is cancelled. It may
// be called from any goroutine.
func (s *stream) interrupt() {
	if uc := s.upstream.Load(); uc != nil {
		_ = uc.SetDeadline(time.Unix(1, 0))
	}
	s.upMu.Lock()
	cancel := s.upCancel
	s.upMu.Unlock()
	if cancel != nil {
		cancel()
	}
	if w := s.wake.Load(); w != nil {
		select {
		case *w <- struct{}{}:
		default:
		}
	}
}

// wakeChan is the channel interrupt signals, made on first use, with a
// wake-up left by an earlier request of this stream, which is stale,
// dropped.
func (s *stream) wakeChan() *chan struct{} {
	w := s.wake.Load()
	if w == nil {
		ch := make(chan struct{}, 1)
		w = &ch
		s.wake.Store(w)
	}
	select {
	case <-*w:
	default:
	}
	return w
}

// downstreamReset reports whether the HTTP/2 client reset the stream, or
// the HTTP/1 client closed its connection while the stream waited on its
// upstream, and then records that as the stream's outcome: whatever failed
// after that (an interrupted upstream exchange, a write) is the client's
// doing.
func (s *stream) downstreamReset() bool {
	if s.peerClosed.Load() {
		s.recordClientGone()
		return true
	}
	return s.peerReset.Load() && s.recordDownstreamReset()
}

// recordClientGone accounts, once, for a client that closed its
// connection with the stream in flight, as Envoy's connection manager
// does when the connection closes under an active request: the stream
// is reset (downstream_rq_rx_reset), nothing more is sent, the connection
// ends, and the access log says DC.
func (s *stream) recordClientGone() {
	if s.goneRecorded {
		return
	}
	s.goneRecorded = true
	s.closeConn = true
	s.flags |= accesslog.DownstreamConnectionTermination
	s.details = "downstream_remote_disconnect"
	s.down.abort()
	if s.conn != nil {
		s.m.stats.rqRxReset.Inc()
		s.conn.destroyedActive()
		s.conn.remoteClosed = true
	}
}

func (s *stream) recordDownstreamReset() bool {
	s.flags |= accesslog.DownstreamRemoteReset
	s.details = "downstream_remote_reset"
	s.down.abort()
	return true
}

// setRequest records the request line's parts once they are known.
func (s *stream) setRequest(method, path, authority string) {
	s.method, s.path, s.authority = method, path, authority
	s.isHead = method == "HEAD"
	s.entry.Method, s.entry.Path, s.entry.Authority, s.entry.Scheme = method, path, authority, s.scheme
	// Random decides the route's runtime_fraction: one value per
	// request, kept when a filter clears the route, as Envoy's stream
	// id. It is drawn at its first use: most requests meet no
	// runtime_fraction.
	s.rreq = router.Request{Host: authority, Path: path, Method: method, Scheme: s.scheme, Headers: &s.reqHeaders,
		Runtime: s.m.deps.Runtime, DrawRandom: true, TLS: s.tls}
}

// end accounts for the finished stream: stats and access-log lines. It
// runs while the request head's buffer still holds what the entry views.
func (s *stream) end() {
	m := s.m
	// Last: the filters are destroyed and the access log is written.
	defer s.releaseRoutes()
	s.stopPeriodicLog()
	s.untransform()
	s.destroyUpstreamFilters()
	s.destroyFilters()
	s.endUpgrade()
	s.tLast = time.Now()
	now := m.stamp(s.tLast)
	st := m.stats
	st.rqActive.Dec()
	st.rqCompleted.Inc()
	st.recordStatus(s.status)
	st.listener.recordEnd(s.status)
	st.rqTime.Record(uint64(now.Sub(s.start).Milliseconds()))
	s.recordRouteResolution()
	if s.drainClose {
		st.cxDrainClose.Inc()
	}
	if m.tracing != nil {
		// traceable_filter: traced because the service forced it, and
		// not a health check (Envoy's shouldTraceRequest).
		s.entry.ServiceForcedTrace = s.traceReason == traceServiceForced && !s.entry.HealthCheck
		if s.span != nil {
			// The span goes last: the request headers the access log
			// reads view the span's buffers, which it gives back when
			// finished.
			defer s.finishSpan(now)
		}
	}
	if m.logs.Empty() {
		if s.span != nil && s.span.Sampled {
			// An operation format names the span from the finished
			// entry (an unsampled span is not named: nobody sees it).
			s.completeEntry(now)
		}
		return
	}
	s.completeEntry(now)
	var err error
	if s.logBuf, err = m.logs.Log(s.logBuf, &s.entry); err != nil {
		m.log.V(1).Info("access log write failed", "error", err.Error())
	}
}

// completeEntry records what the access log knows only once the response
// is sent: its status, flags, sizes, headers and the duration to now.
func (s *stream) completeEntry(now time.Time) { s.fillEntry(&s.entry, now) }

// decode runs the HTTP filters and the router on the request.
func (s *stream) decode() {
	m := s.m
	if dl, ok := m.debug.Debug(); ok && dl.Enabled() {
		// Envoy's connection manager debug record of each new request.
		dl.Info("request headers complete", "method", s.method, "path", s.path, "authority", s.authority)
	}
	if o := m.deps.Overload; o != nil && o.StopAcceptingRequests() {
		// The overload manager sheds the request before any filter
		// runs, as Envoy does.
		m.stats.rqOverloadClose.Inc()
		s.localReply(503, bodyOverloaded, accesslog.OverloadManager, "overload")
		return
	}
	if s.upg.connectUDP && !s.rewriteConnectUDPAuthority() {
		return
	}
	if s.upg.typ != "" && !s.admitUpgrade() {
		return
	}
	if m.tracing != nil {
		s.startTracing()
	}
	if o := m.cfg.logOpts; (o.onNewRequest || o.flushInterval > 0) && !m.logs.Empty() {
		if o.onNewRequest {
			s.logNow(datav3.AccessLogType_DownstreamStart)
		}
		if o.flushInterval > 0 {
			s.startPeriodicLog()
		}
	}
	for {
		s.redir.dispatching = true
		followed := s.dispatch()
		s.redir.dispatching = false
		if !followed && !s.redir.recreating {
			return
		}
		// An internal redirect, or a filter recreated the stream: the
		// redirected request runs the filters and the router again
		// (see internal_redirect.go, recreate.go).
		s.recreate()
	}
}

// dispatch runs the HTTP filters and the router on the request; it
// reports whether the response is an internal redirect to follow.
func (s *stream) dispatch() bool {
	m := s.m
	if !s.decodeFilters() {
		return false
	}
	s.transformRequest()
	m.stats.routerRqTotal.Inc()
	route := s.Route()
	if route == nil {
		if dl, ok := m.routerDebug.Debug(); ok && dl.Enabled() {
			dl.Info("no route match for URL '" + s.path + "'")
		}
		m.stats.noRoute.Inc()
		s.localReply(404, "", accesslog.NoRouteFound, "route_not_found")
		return false
	}
	s.route = route
	s.entry.RouteName = route.Name
	s.entry.RouteMetadata = routeMetadata(route)
	s.entry.VirtualHostMetadata = route.VirtualHost.Metadata
	switch {
	case route.Direct != nil:
		m.stats.rqDirectResponse.Inc()
		body, contentType := route.Direct.Render(&s.entry)
		s.localReplyAs(int(route.Direct.Status), -1, body, 0, "direct_response", "", contentType)
	case route.Redirect != nil:
		m.stats.rqRedirect.Inc()
		s.redirect(route.Redirect.Status, route.RedirectLocation(&s.rreq, &s.entry))
	default:
		s.forward()
		return s.redir.pending
	}
	return false
}

// requestEnded records that the request has all arrived: its body was read
// to its end, or it has none. The first time is the access log's last
// request byte (%REQUEST_DURATION%).
func (s *stream) requestEnded() {
	s.bodyDone = true
	if s.entry.LastRequestByte.IsZero() {
		s.entry.LastRequestByte = s.m.stamp(time.Now())
	}
}
