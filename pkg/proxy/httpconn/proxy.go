package httpconn

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// maxStaleRetries bounds how often a request goes out again because a
// pooled connection turned out to be closed by the upstream before it sent
// anything: a race every keep-alive client has, which must not become an
// error for the downstream.
const maxStaleRetries = 2

// upstreamScratch is what an HTTP/1 upstream exchange reuses from request
// to request: an HTTP/1 downstream connection keeps one for all its
// requests.
type upstreamScratch struct {
	out  outBuf
	head []byte
	// maxHead bounds the response head: the cluster's
	// max_response_headers_kb.
	maxHead int
	// keys is the cluster's HTTP/1.1 format; with its preserve_case
	// formatter, raw is a copy of the response head before parsing.
	keys *upstream.HTTP1Format
	raw  []byte
	resp http1.Response
	body http1.BodyReader
	// lr is the upstream side of a spliced body (see splice.go).
	lr io.LimitedReader
	// wait writes a request and waits for its response without a read
	// that finds nothing (see responseWait).
	wait responseWait
}

// forward sends the request to the route's cluster and relays the
// response.
func (s *stream) forward() {
	m := s.m
	route := s.route
	if s.path == "" && !s.upg.connect {
		// An authority-form target (CONNECT) goes only where a
		// connect_matcher route sends it.
		m.stats.noRoute.Inc()
		s.localReply(404, "", accesslog.NoRouteFound, "route_not_found")
		return
	}
	if s.downstreamReset() {
		// An HTTP/2 client reset the stream while it was routed: no
		// upstream sees it.
		return
	}
	name := s.clusterName
	var cl UpstreamCluster
	if m.deps.Upstreams != nil && name != "" {
		cl = m.deps.Upstreams.Cluster(name)
	}
	if dl, ok := m.routerDebug.Debug(); ok && dl.Enabled() {
		dl.Info("cluster '"+name+"' match for URL '"+s.path+"'", "route", route.Name)
	}
	if cl == nil {
		if dl, ok := m.routerDebug.Debug(); ok && dl.Enabled() {
			dl.Info("unknown cluster '" + name + "'")
		}
		m.stats.noCluster.Inc()
		s.localReply(route.ClusterNotFoundStatus, "", accesslog.NoClusterFound, "cluster_not_found")
		return
	}
	s.cluster = cl
	s.clPolicies = clusterPolicies(cl)
	s.entry.UpstreamCluster = cl.Name()
	s.selectRouteStats()
	s.entry.ClusterMetadata = cl.Metadata()
	if len(m.filters.strictCheck) > 0 && !s.strictCheckHeaders() {
		return
	}
	s.rewrite()
	if cl.DropOverload() {
		// Envoy's router drops before it picks a host, retries or
		// mirrors, and counts the 503 as the upstream's.
		s.chargeCode(cl.Stats(), 503)
		s.localReplyAs(503, -1, bodyDropOverload, accesslog.DropOverload, "drop_overload", "x-envoy-drop-overload", "")
		return
	}
	s.pick = upstream.PickContext{OriginalDst: s.origDst, Headers: &s.reqHeaders, Authority: s.authority, MetadataMatch: s.metadataMatch(route), DynamicMetadata: s.entry.DynamicMetadata, FilterState: s, Override: s.override}
	// The hash key is computed only if the cluster's balancer reads it
	// (PickHash), with the route's hash_policy, or with the balancer's
	// own (PickHashWith).
	s.pick.Hasher = s
	s.retryPredicates()
	s.startMirrors(cl)
	s.keepRetryBody()
	s.keepRedirectBody()
	for {
		if !s.attempt(cl, route) {
			break
		}
		if !s.backOff(cl) {
			break
		}
		s.nextAttempt()
	}
	s.restoreAttemptBody()
	if r := &s.retry; r.body != nil {
		s.body = r.body.src
		if s.leaked {
			// An HTTP/2 transport may still read it.
			r.spare = nil
		}
	}
	s.releaseRetry(cl)
}

// attempt sends the request to a host of cl, picked for it, and relays
// the response, or answers the failure. It returns true when the outcome
// is to be retried: nothing was answered then.
func (s *stream) attempt(cl UpstreamCluster, route *router.Route) (retry bool) {
	s.restoreAttemptBody()
	host := cl.PickHost(&s.pick)
	if dl, ok := s.m.routerDebug.Debug(); ok && dl.Enabled() {
		if host == nil {
			dl.Info("no healthy host for cluster '" + cl.Name() + "'")
		} else {
			dl.Info("upstream host "+host.Address+" selected", "cluster", cl.Name(), "attempt", s.retry.attempts+1)
		}
	}
	if host == nil {
		// Counted as the upstream's answer, as Envoy's
		// sendNoHealthyUpstreamResponse counts it.
		status := s.noHostStatus()
		s.chargeCode(cl.Stats(), status)
		s.localReply(status, bodyNoHealthyUpstream, accesslog.NoHealthyUpstream, "no_healthy_upstream")
		return false
	}
	cl, ps := s.beginAttempt(cl, route, host)
	// However it ends, the attempt's upstream filters end with it.
	defer s.destroyUpstreamFilters()
	if s.upAnswered {
		// An upstream filter answered: the attempt ends, and is not
		// retried (see upstream_filters.go).
		s.endAttempt(cl, ps, host, s.status >= 500)
		return false
	}
	s.injectTrace(cl)
	upstreamH2 := cl.HTTP2For(s.proto == protoHTTP2)
	switch {
	case s.upg.connectUDP && route.TerminatesConnectUDP():
		s.connectUDP(cl, host)
	case route.TerminatesTunnel(s.method, s.upg.connect):
		s.connectTCP(cl, host, route.Connect)
	case s.upg.typ != "" && upstreamH2:
		s.upgradeHTTP2(cl, host)
	case upstreamH2:
		retry = s.forwardHTTP2(cl, host)
	default:
		retry = s.forwardHTTP1(cl, host)
	}
	if upstreamH2 {
		s.finishChildSpan(cl, protoHTTP2)
	} else {
		s.finishChildSpan(cl, protoHTTP11)
	}
	s.endAttempt(cl, ps, host, retry || s.status >= 500 || s.flags&upstreamFailure != 0)
	return retry
}

// beginAttempt counts an attempt of the request on host, picked from cl,
// and readies the request for it; it returns the cluster that carries
// the attempt (an aggregate's host's own) and the stats of its pool.
func (s *stream) beginAttempt(cl UpstreamCluster, route *router.Route, host *upstream.Host) (UpstreamCluster, *upstream.ClusterStats) {
	if hc, ok := cl.(hostCluster); ok {
		// An aggregate cluster: the host's own cluster carries the
		// attempt.
		cl = hc.ForHost(host)
	}
	s.host = host
	s.retry.attempts++
	s.entry.UpstreamRequestAttemptCount = uint32(s.retry.attempts)
	s.entry.UpstreamHost = host.Address
	s.entry.UpstreamHostMetadata = host.Metadata
	if route.AutoHostRewrite && host.Hostname != "" {
		// auto_host_rewrite: the chosen host's name, once it is known.
		s.updateAuthority(host.Hostname)
	}
	if route.VirtualHost.IncludeRequestAttemptCount {
		s.attemptBuf = setNumber(&s.reqHeaders, "x-envoy-attempt-count", int64(s.retry.attempts), s.attemptBuf)
	}
	if route.VirtualHost.IncludeIsTimeoutRetryHeader && s.retry.attempts > 1 {
		// Retries only, as Envoy's doRetry sets it.
		v := "false"
		if s.retry.timeoutRetry {
			v = "true"
		}
		s.reqHeaders.Set("x-envoy-is-timeout-retry", v)
	}
	// From here on the request goes to an upstream: its responses,
	// and the proxy's answers to its failures, carry the attempt count.
	s.attemptCountInResponse = route.VirtualHost.IncludeAttemptCountInResponse
	if s.m.uplog != nil {
		s.beginAttemptLog()
	}
	ps := cl.Stats()
	s.beginTracked(ps.Tracked)
	s.upAnswered = !s.decodeUpstream(route)
	if p, ok := cl.(poolStatser); ok {
		// An aggregate's attempt: the pool of the host's cluster counts
		// the request, as Envoy's connection pools do.
		ps = p.PoolStats()
	}
	s.chargeRequest(ps)
	ps.UpstreamRqActive.Inc()
	host.Stats.RqTotal.Add(1)
	host.Stats.RqActive.Add(1)
	return cl, ps
}

// endAttempt counts the end of an attempt beginAttempt counted; failed
// tells whether it failed (or was retried).
func (s *stream) endAttempt(cl UpstreamCluster, ps *upstream.ClusterStats, host *upstream.Host, failed bool) {
	ps.UpstreamRqActive.Dec()
	ps.UpstreamRqCompleted.Inc()
	host.Stats.RqActive.Add(-1)
	if s.m.uplog != nil {
		s.endAttemptLog(host.Address)
	}
	if s.track.stats != nil {
		s.endTracked()
	}
	if cl.HealthChecked() {
		s.noteImmediateHealthCheckFail(cl, host)
	}
	if failed {
		host.Stats.RqError.Add(1)
	} else {
		host.Stats.RqSuccess.Add(1)
	}
}

// PickHash computes the request's hash key with the route's hash_policy,
// for a ring hash or maglev cluster (upstream.Hasher): from the request
// headers and path as received, the downstream's address and the
// connection's addresses (a generated cookie's value).
func (s *stream) PickHash() (uint64, bool) {
	p := s.route.HashPolicy
	if cp := s.clPolicies; cp != nil && cp.Hash != nil {
		p = cp.Hash
	}
	if p == nil {
		return 0, false
	}
	return s.PickHashWith(p)
}

// PickHashWith computes the request's hash key with p: a ring hash or
// maglev balancer's own hash_policy, which replaces the route's as in
// Envoy (cluster.PolicyHasher).
func (s *stream) PickHashWith(p *router.HashPolicy) (uint64, bool) {
	in := router.HashInput{Request: &s.rreq, SourceIP: s.remoteIP, ConnRemote: s.remote, ConnLocal: s.local, SetCookies: s.setCookies, FilterState: s.filterStateHash}
	h, ok := p.Hash(&in)
	s.setCookies = in.SetCookies
	return h, ok
}

// mutateUpstreamResponse edits the head of an upstream's response, whose
// body is n bytes long (-1: unknown) or none: the attempt's upstream
// filters, the cookies the hash policy generated, then the route's
// response header mutations. It returns the body to announce, which an
// upstream filter that replaced the response changed.
func (s *stream) mutateUpstreamResponse(n int64, hasBody bool) (int64, bool) {
	// The upstream filters see the body as the response has it
	// (ResponseBody), and may transform it.
	s.respLength, s.respHasBody = n, hasBody
	s.encodeUpstream()
	if s.ulog != nil {
		s.attemptHead()
	}
	if s.track.stats != nil {
		s.trackedHead()
	}
	s.mutateRouterResponse()
	return s.respLength, s.respHasBody
}

// mutateUpgradeResponse edits the head of an upstream's answer to an
// upgrade or a CONNECT, whose body is the tunnel: the upstream filters see
// no body.
func (s *stream) mutateUpgradeResponse() { s.mutateUpstreamResponse(0, false) }

// mutateRouterResponse is the router's own edits of an upstream's
// response head: the cookies the hash policy generated, then the route's
// response header mutations.
func (s *stream) mutateRouterResponse() {
	if len(s.setCookies) > 0 {
		s.addSetCookies()
	}
	s.route.MutateWeightedResponse(s.wc, &s.respHeaders, &s.entry)
	s.route.MutateResponseHeaders(&s.respHeaders, &s.entry)
}

func (s *stream) addSetCookies() {
	for _, c := range s.setCookies {
		s.respHeaders.Add("set-cookie", c)
	}
}

// upstreamFailure are the flags of requests the upstream failed.
const upstreamFailure = accesslog.UpstreamRequestTimeout | accesslog.UpstreamConnectionFailure |
	accesslog.UpstreamConnectionTermination | accesslog.UpstreamProtocolError | accesslog.UpstreamRemoteReset

// rewrite applies the route's path and host rewrites and request header
// edits, and the headers Envoy's router adds.
func (s *stream) rewrite() {
	r := s.route
	s.upPath = s.path
	if r.RewritesPath() && s.path != "" {
		if p := r.RewritePath(s.path); p != s.path {
			if !s.m.filters.suppressEnvoyHeaders {
				s.reqHeaders.Set("x-envoy-original-path", s.path)
			}
			s.upPath = p
		}
	}
	s.upAuthority = s.authority
	// The access log shows the request as it went upstream, as Envoy's
	// does (the original path stays in x-envoy-original-path).
	s.entry.Path = s.upPath
	s.rqTimeout = r.Timeout
	if r.GrpcTimeout != nil && s.grpcRequest() {
		s.applyGrpcTimeout(r.GrpcTimeout)
	}
	s.initRetries()
	if !s.m.filters.suppressEnvoyHeaders {
		// The per-try timeout when there is one and no hedging (which
		// lets an attempt run to the route timeout), as in Envoy.
		if expected := s.retry.perTry; expected > 0 && !s.retry.hedge {
			s.numBuf = setNumber(&s.reqHeaders, "x-envoy-expected-rq-timeout-ms", expected.Milliseconds(), s.numBuf)
		} else if s.rqTimeout > 0 {
			s.numBuf = setNumber(&s.reqHeaders, "x-envoy-expected-rq-timeout-ms", s.rqTimeout.Milliseconds(), s.numBuf)
		}
	}
	if host := r.MutateWeightedRequest(s.wc, &s.reqHeaders, &s.entry); host != "" {
		// Envoy sets the host as it is, without x-envoy-original-host.
		s.upAuthority, s.entry.Authority = host, host
	}
	r.MutateRequestHeaders(&s.reqHeaders, &s.entry)
	// The host is rewritten after the header edits, as in Envoy's
	// finalizeRequestHeaders: host_rewrite_header may name a header
	// they add, and host_rewrite_path_regex reads the path as
	// received.
	if host := r.RewriteHost(&s.reqHeaders, s.path); host != "" {
		s.updateAuthority(host)
	} else if host := r.FormatHost(&s.entry); host != "" {
		s.updateAuthority(host)
	}
	// A path_rewrite format, like the host's, sees the edited headers;
	// the path goes after the host, as in Envoy.
	if r.FormatsPath() && s.path != "" {
		if p := r.FormatPath(&s.entry, s.path); p != "" && p != s.path {
			if !s.m.filters.suppressEnvoyHeaders {
				s.reqHeaders.Set("x-envoy-original-path", s.path)
			}
			s.upPath, s.entry.Path = p, p
		}
	}
}

// setServiceTime sets x-envoy-upstream-service-time on the response, the
// upstream's time to its response head, unless the router's
// suppress_envoy_headers leaves it out.
func (s *stream) setServiceTime(d time.Duration) {
	if s.m.filters.suppressEnvoyHeaders {
		return
	}
	s.svcTimeBuf = setNumber(&s.respHeaders, "x-envoy-upstream-service-time", d.Milliseconds(), s.svcTimeBuf)
}

// updateAuthority makes host the :authority sent upstream, as Envoy's
// updateAuthority does: the original goes in x-envoy-original-host and,
// with append_x_forwarded_host, at the end of x-forwarded-host (unless it
// is its last entry already).
func (s *stream) updateAuthority(host string) {
	if old := s.upAuthority; old != "" {
		h := &s.reqHeaders
		if !s.m.filters.suppressEnvoyHeaders {
			h.Set("x-envoy-original-host", old)
		}
		if s.route.AppendXForwardedHost {
			xfh, ok := h.Get("x-forwarded-host")
			switch {
			case !ok || strings.TrimSpace(xfh) == "":
				h.Set("x-forwarded-host", old)
			case lastXFHEntry(xfh) != old:
				h.Set("x-forwarded-host", xfh+","+old)
			}
		}
	}
	s.upAuthority = host
	s.entry.Authority = host
}

// lastXFHEntry is the last entry of an x-forwarded-host list, as Envoy
// splits it: on commas, skipping entries that are only white space, the
// others kept as they are.
func lastXFHEntry(xfh string) string {
	for xfh != "" {
		i := strings.LastIndexByte(xfh, ',')
		entry := xfh[i+1:]
		if strings.TrimSpace(entry) != "" {
			return entry
		}
		if i < 0 {
			break
		}
		xfh = xfh[:i]
	}
	return ""
}

// idleTimeout is the stream idle timeout in force: the route's when it
// sets one, else the connection manager's, scaled by the overload
// manager's reduce_timeouts.
func (s *stream) idleTimeout() time.Duration {
	if s.route != nil {
		if d, ok := s.route.IdleTimeout(); ok {
			return s.m.scaleStreamIdle(d)
		}
	}
	return s.m.scaleStreamIdle(s.m.cfg.streamIdleTimeout)
}

// forwardHTTP1 runs the exchange over a pooled HTTP/1.1 connection, again
// on a fresh one when a reused connection turns out to be dead before the
// upstream answered anything (only for requests without a body, which can
// be sent twice safely). It returns true when the attempt's outcome is to
// be retried (see retry.go), having answered nothing.
func (s *stream) forwardHTTP1(cl UpstreamCluster, host *upstream.Host) (retry bool) {
	ctx, cancel := s.connectContext()
	defer cancel()
	ctx = s.withAutoSNI(ctx, cl)
	if s.conn == nil {
		// An HTTP/2 client's reset ends the wait for a connection; what
		// that costs is paid only if the request has to wait or dial.
		ctx = s.resetCtx.start(s, ctx)
		defer s.resetCtx.end()
	}
	// A request waiting for a connection (the circuit breakers keep one
	// from opening) waits no longer than its route timeout, which runs
	// from the end of the request: from now for one without a body.
	var pendingEnd time.Time
	if s.body == nil || s.retry.retryable() {
		pendingEnd = s.routeDeadline(s.tLast)
	}
	for attempt := 0; ; attempt++ {
		uc, err := cl.AcquireHTTP1For(ctx, host, s.acquire(pendingEnd))
		if err != nil {
			switch {
			case s.downstreamReset():
				// An HTTP/2 client reset the stream while it waited.
			case s.clientGone != nil && errors.Is(err, context.Canceled) && s.clientGone():
				// An HTTP/1.1 client closed its connection while it
				// waited: nobody to answer.
				s.downstreamFailed()
			case s.maxDurationReached(time.Now()):
			case !pendingEnd.IsZero() && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(pendingEnd):
				s.routeTimedOut(cl)
			case !errors.Is(err, upstream.ErrOverflow) && s.retryReset(cl, resetConnectFailure, false):
				return true
			default:
				s.connectFailed(cl, err)
			}
			return false
		}
		s.outlierConnected()
		s.startUpstreamDuration(cl)
		mayRetry := s.body == nil && attempt < maxStaleRetries && uc.Requests > 1
		switch s.exchangeHTTP1(cl, uc, mayRetry, pendingEnd) {
		case exchangeDone, exchangeHedged:
			return false
		case exchangeRetry:
			return true
		}
	}
}

// exchangeOutcome is how an HTTP/1 exchange ended.
type exchangeOutcome uint8

const (
	// exchangeDone: the request was answered (or its client is gone).
	exchangeDone exchangeOutcome = iota
	// exchangeStale: a reused connection was dead; the request goes out
	// again on another (see forwardHTTP1).
	exchangeStale
	// exchangeRetry: the attempt's outcome is retried (see retry.go).
	exchangeRetry
	// exchangeHedged: the request was answered by a race of attempts
	// (see hedge.go), which took the connection over.
	exchangeHedged
)

// connectFailed answers a request whose upstream connection could not be
// opened.
func (s *stream) connectFailed(cl UpstreamCluster, err error) {
	if s.maxDurationReached(time.Now()) {
		return
	}
	if errors.Is(err, upstream.ErrOverflow) {
		s.overflowed(cl)
		return
	}
	s.chargeCode(cl.Stats(), 503)
	body, details := bodyConnectFailure, "upstream_reset_before_response_started{connection_failure}"
	if isTimeoutErr(err) {
		body, details = bodyConnectTimeout, "upstream_reset_before_response_started{connection_timeout}"
	}
	s.entry.UpstreamTransportFailureReason = err.Error()
	var (
		he *tlsconfig.HandshakeError
		le *upstream.LocalConnectError
	)
	if errors.As(err, &le) {
		// original_src: the socket could not bind the client's address
		// or take its options; Envoy closes it locally, with the bind's
		// reason.
		s.entry.UpstreamTransportFailureReason = le.Reason
		body, details = bodyLocalConnectFailure, "upstream_reset_before_response_started{local_connection_failure}"
		if le.Reason != "" {
			body += ", transport failure reason: " + le.Reason
			details = "upstream_reset_before_response_started{local_connection_failure|" + strings.ReplaceAll(le.Reason, " ", "_") + "}"
		}
	}
	if errors.As(err, &he) {
		// Envoy: the TLS socket closes the connection as a remote close,
		// and the reason is BoringSSL's error (spaces become '_' in
		// details).
		reason := he.FailureReason()
		s.entry.UpstreamTransportFailureReason = reason
		body = bodyRemoteConnectFailure + ", transport failure reason: " + reason
		details = "upstream_reset_before_response_started{remote_connection_failure|" + strings.ReplaceAll(reason, " ", "_") + "}"
	}
	s.localReply(503, body, accesslog.UpstreamConnectionFailure, details)
}

// routeTimedOut answers a request whose route timeout passed before a
// response head (while it waited for a connection too, as in Envoy):
// 504, UT.
func (s *stream) routeTimedOut(cl UpstreamCluster) {
	cs := cl.Stats()
	s.chargeTimeout(cs)
	s.host.Stats.RqTimeout.Add(1)
	s.chargeCode(cs, 504)
	s.localReply(504, bodyUpstreamTimeout, accesslog.UpstreamRequestTimeout, "upstream_response_timeout")
}

// overflowed answers a request a circuit breaker of the cluster refused
// (upstream.ErrOverflow), as Envoy's router answers an overflow: a 503
// flagged UO with x-envoy-overloaded, counted as the upstream's 503.
func (s *stream) overflowed(cl UpstreamCluster) {
	s.chargeCode(cl.Stats(), 503)
	s.localReplyAs(503, -1, bodyOverflow, accesslog.UpstreamOverflow, "upstream_reset_before_response_started{overflow}", "x-envoy-overloaded", "")
}

// exchangeHTTP1 sends the request on uc and relays the response. Unless
// it answered, it has released uc. routeEnd is the route timeout's
// deadline forwardHTTP1 computed for a request read whole (or kept for
// retries): from s.tLast, which nothing moves before the request is sent.
func (s *stream) exchangeHTTP1(cl UpstreamCluster, uc *upstream.Conn, mayRetry bool, routeEnd time.Time) (out exchangeOutcome) {
	u := s.up
	if s.downstreamReset() {
		// The reset came while the connection was acquired: nothing
		// was sent on it, so it goes back to the pool as it is.
		cl.ReleaseHTTP1(uc, true)
		return exchangeDone
	}
	reusable := false
	s.upstream.Store(uc)
	if s.conn != nil {
		s.conn.beginUpstreamWait()
	}
	if s.peerReset.Load() || s.peerClosed.Load() {
		// The reset came before the exchange could be interrupted.
		s.interrupt()
	}
	defer func() {
		if s.conn != nil {
			s.conn.endUpstreamWait()
		}
		s.upstream.Store(nil)
		if out != exchangeStale && out != exchangeHedged {
			cl.ReleaseHTTP1(uc, reusable)
		}
	}()
	s.noteHTTP1Conn(uc)
	if s.m.uplog != nil {
		s.poolReadyLog()
	}
	// The route timeout runs from the end of the request to the end of
	// the response, as Envoy's does. A request without a body ends as it
	// starts, so one deadline covers sending it and the whole answer; a
	// body is sent under the stream idle timeout alone, pushed back as
	// it flows.
	sent := s.tLast
	tm := upstreamTimer{idle: s.idleTimeout(), limit: s.durationLimit()}
	if s.body == nil || s.retry.retryable() {
		// A body kept for a retry has been read whole already.
		tm.hard = routeEnd
		if s.retry.perTry > 0 {
			// The clock is read only for a per-try timeout to arm.
			tm.perTry = s.armPerTry(time.Now())
		}
		s.armPerTryIdle(&tm)
	}
	_ = uc.SetDeadline(tm.deadline(sent))
	u.out.reset(uc)
	u.maxHead = cl.MaxResponseHeadBytes()
	u.keys = cl.HTTP1Format()
	s.appendRequestHead(&u.out, u.keys)
	var (
		sendErr        error
		downstreamSide bool
		// bodyUnsent: the upstream answered an Expect: 100-continue
		// with its final response, and got no body.
		bodyUnsent bool
		// bodyTimed: the timeouts that start once the body is sent
		// were armed (see bodySent).
		bodyTimed bool
		cw        *continueWait
	)
	if s.proxiesContinue() {
		if sendErr = u.out.flush(); sendErr == nil {
			cw = s.startContinue(uc)
			defer cw.stop(uc)
			switch s.awaitContinue(cl, cw) {
			case continueStop:
				return exchangeDone
			case continueAnswered:
				bodyUnsent = true
			}
		}
	}
	if sendErr == nil && !bodyUnsent {
		sendErr, downstreamSide = s.sendRequestBody(&u.out, &tm, uc, cl)
		if sendErr == nil {
			raw := s.responseRawConn(u, uc)
			if raw != nil && s.body != nil {
				// The whole request, body included, is in u.out,
				// about to leave in one write: it is sent.
				sent, bodyTimed = s.bodySent(&tm, uc), true
			}
			sendErr = s.flushAwaitingResponse(u, uc, raw)
		}
	}
	if sendErr != nil && downstreamSide {
		s.requestBodyFailed(sendErr)
		return exchangeDone
	}
	if s.body != nil && !bodyTimed {
		sent = s.bodySent(&tm, uc)
	}
	if s.retry.hedge && s.hedgesHTTP1(cw, sendErr, &tm) {
		s.hedgeHTTP1(cl, uc, tm, sent, mayRetry)
		return exchangeHedged
	}
	kind, err, stop := s.finalResponseHead(cl, cw, uc)
	if s.conn != nil {
		// The client is watched while the answer is awaited only:
		// relaying it, a write finds a client that went away.
		s.conn.endUpstreamWait()
	}
	if stop {
		return exchangeDone
	}
	noteHTTP1Head(cl.Stats(), &u.resp, err)
	if err != nil {
		if mayRetry && sentNothingBack(err) {
			cl.ReleaseHTTP1(uc, false)
			return exchangeStale
		}
		if s.retryFailedHTTP1(cl, err, &tm) {
			return exchangeRetry
		}
		s.upstreamFailed(cl, err, &tm, sendErr)
		return exchangeDone
	}
	if sendErr == nil && s.opensTunnel(u.resp.Status) {
		s.tunnelHTTP1(cl, uc, sent)
		return exchangeDone
	}
	if sendErr != nil || bodyUnsent {
		// The upstream answered before taking the whole body: relay
		// its answer, then close, as the rest of the body is unread.
		s.connectionUnusable()
	}
	now := time.Now()
	s.tLast = now
	s.upSent = sent
	resp := &u.resp
	s.copyResponseHeaders(u)
	s.status = resp.Status
	s.outlierResponse()
	if s.retryResponse(cl, resp.Status) {
		// The connection closes: the rest of the response is not read.
		s.respHeaders.reset()
		return exchangeRetry
	}
	if s.route.InternalRedirect != nil && sendErr == nil && !bodyUnsent && s.followsRedirect(cl, resp.Status) {
		// Followed: the connection closes, the response unread.
		return exchangeDone
	}
	if !tm.perTry.IsZero() {
		// The per-try timeout ends with the response head, as Envoy's.
		tm.perTry, s.retry.perTryEnd = time.Time{}, time.Time{}
		_ = uc.SetDeadline(tm.deadline(now))
	}
	reusable = s.relayHTTP1(cl, uc, kind, sent, now, &tm) && sendErr == nil && !bodyUnsent
	return exchangeDone
}

// bodySent arms the timeouts that start once the request body is sent
// (the route timeout, and a per-try timeout not armed yet) on uc, and
// returns when that was.
func (s *stream) bodySent(tm *upstreamTimer, uc *upstream.Conn) time.Time {
	sent := time.Now()
	s.tLast = sent
	tm.hard = s.routeDeadline(sent)
	if tm.perTry.IsZero() {
		tm.perTry = s.armPerTry(sent)
		s.armPerTryIdle(tm)
	}
	_ = uc.SetDeadline(tm.deadline(sent))
	return sent
}

// relayHTTP1 relays the response whose head came at now on uc (in s.up,
// its fields in s.respHeaders) to the client; sent is when the request
// went out. It reports whether uc may carry another request.
func (s *stream) relayHTTP1(cl UpstreamCluster, uc *upstream.Conn, kind http1.BodyKind, sent, now time.Time, tm *upstreamTimer) (reusable bool) {
	u := s.up
	resp := &u.resp
	s.entry.FirstUpstreamByte = s.m.stamp(now)
	s.details = "via_upstream"
	s.setServiceTime(now.Sub(sent))
	n := resp.ContentLength
	if kind != http1.BodyLength && kind != http1.BodyNone {
		n = -1
	}
	n, hasBody := s.mutateUpstreamResponse(n, kind != http1.BodyNone)
	if err := s.sendHead(n, hasBody); err != nil {
		if err != errRecreated {
			s.downstreamFailed()
		}
		// Recreated: the connection closes, the response unread.
		return false
	}
	u.body.Reset(uc.R, kind, resp.ContentLength, maxTrailerBytes, s.flushDown)
	if cl.HTTP1Trailers() {
		u.body.KeepTrailers(s.m.cfg.maxHeadersCount)
	}
	var down, up *net.TCPConn
	var piece int64
	if resp.ContentLength-int64(uc.R.Buffered()) >= spliceMin && kind == http1.BodyLength {
		down, up, piece = s.spliceEnds(uc)
	}
	for pieces := 0; ; pieces++ {
		if down != nil && u.body.Unbuffered() >= spliceMin {
			// What came with the head goes out with it; the rest
			// moves between the sockets.
			if !s.spliceResponse(cl, uc, tm, down, up, piece) {
				return false
			}
			down = nil
		}
		p, err := u.body.Next()
		if len(p) > 0 {
			if err := s.writeResponseBody(p); err != nil {
				s.downstreamFailed()
				return false
			}
			s.bytesSent += uint64(len(p))
			s.logSent()
			if done, err := s.readRest(uc); done && err != nil {
				// Out goes what did come, as the copy would have
				// sent it before waiting (which may have taken the
				// client's write deadline too).
				s.down.touch(time.Now())
				_ = s.down.flush()
				s.responseBodyFailed(cl, err, tm)
				return false
			}
			// A body in one piece (the common case) reads no clock;
			// a throttled one may have waited long on its first.
			if pieces > 0 || s.xdown.throttled {
				now := time.Now()
				if tm.stale(now) {
					_ = uc.SetDeadline(tm.deadline(now))
				}
				s.down.touch(now)
			}
		}
		// The body's reader returns io.EOF itself: compared first, it
		// spares errors.Is's reflection on each response.
		if err == io.EOF || err != nil && errors.Is(err, io.EOF) {
			uc.Answered = true
			break
		}
		if err != nil && s.flushFailed() {
			// The reader flushes the client's output before it waits:
			// the client failed, not the upstream.
			s.downstreamFailed()
			return false
		}
		if err != nil {
			s.responseBodyFailed(cl, err, tm)
			return false
		}
	}
	if t := trailerHeader(u.body.Trailers()); len(t) > 0 {
		s.respTrailers = t
		s.down.trailers(t)
	}
	if err := s.down.finish(); err != nil {
		s.downstreamFailed()
		return false
	}
	cs := cl.Stats()
	s.chargeCode(cs, s.status)
	s.chargeTime(cs, time.Since(sent))
	return resp.Reusable(kind)
}

// writeResponseBody sends p, a piece of the upstream's response body, to
// the client. The last piece of a body going to the HTTP/1 client itself
// (no encoder between) is written as such: a large one leaves with the
// head without being copied behind it (see outBuf.writeLast).
func (s *stream) writeResponseBody(p []byte) error {
	done := s.up.body.Done()
	if c := s.conn; c != nil && done && s.down == downstream(c) {
		return c.writeLastBody(p)
	}
	s.produced = done
	return s.down.writeBody(p)
}

// appendRequestHead serialises the request as it goes upstream in the
// cluster's format f: field names in proper case, the target in absolute
// form, when it asks for them.
func (s *stream) appendRequestHead(o *outBuf, f *upstream.HTTP1Format) {
	start := len(o.b)
	b := o.b
	b = append(b, s.method...)
	b = append(b, ' ')
	switch {
	case s.upg.connect:
		// A CONNECT's target is its authority (RFC 9110 §9.3.6).
		b = append(b, s.upAuthority...)
	case f.FullyQualifiedURL && s.upAuthority != "":
		b = s.appendAbsoluteTarget(b, f)
	default:
		b = append(b, s.upPath...)
	}
	b = append(b, " HTTP/1.1\r\n"...)
	if s.upAuthority != "" {
		b = append(b, "host: "...)
		b = append(b, s.upAuthority...)
		b = append(b, http1.CRLF...)
	}
	for i := range s.reqHeaders.fields {
		f := &s.reqHeaders.fields[i]
		b = http1.AppendHeaderString(b, f.name, f.value)
	}
	b = s.appendUpgradeHeaders(b)
	if s.proxiesContinue() {
		b = append(b, "expect: 100-continue\r\n"...)
	}
	switch {
	case s.reqChunked:
		b = append(b, "transfer-encoding: chunked\r\n"...)
	case s.reqLength >= 0:
		b = http1.AppendContentLength(b, s.reqLength)
	}
	o.b = append(b, http1.CRLF...)
	switch {
	case s.cases.reqOn:
		// The client's spellings travel with the request, whatever
		// the cluster's format, as Envoy's stateful formatter does.
		s.formatRequestNames(o.b[start:])
	case f.ProperCase:
		http1.ProperCaseNames(o.b[start:])
	}
}

// readyBody is a request body that can tell whether its next piece is
// there without waiting for the client (an HTTP/2 stream's DATA).
type readyBody interface {
	Ready() bool
}

// sendRequestBody streams the request body into o, re-framed (chunked
// bodies are decoded and encoded again), pushing back the idle deadlines
// of both sides (tm's on uc) as it flows; a chunked body ends with the
// request's trailers when cl carries them (enable_trailers). On error,
// downstreamSide tells whether reading the client failed, rather than
// writing the upstream.
func (s *stream) sendRequestBody(o *outBuf, tm *upstreamTimer, uc *upstream.Conn, cl UpstreamCluster) (err error, downstreamSide bool) {
	if s.body == nil {
		s.requestEnded()
		return nil, false
	}
	if s.expect100 {
		s.expect100 = false
		if err := s.down.continue100(); err != nil {
			return err, true
		}
	}
	down, up, piece := s.requestSpliceEnds(uc)
	for pieces := 0; ; pieces++ {
		if down != nil && s.conn.x.body.Unbuffered() >= spliceMin {
			// What came with the head goes out with it; the rest
			// moves between the sockets.
			if err, downstreamSide := s.spliceRequest(o, tm, uc, down, up, piece); err != nil {
				return err, downstreamSide
			}
			down = nil
		}
		if len(o.b) > 0 {
			if r, ok := s.body.(readyBody); ok && !r.Ready() {
				// What is gathered (the head, the pieces so far)
				// goes out before the wait for the client's next
				// piece, as Envoy sends the headers at once. An
				// HTTP/1 client's reader flushes by itself (flushUp).
				if err := o.flush(); err != nil {
					return err, false
				}
			}
		}
		p, err := s.body.Next()
		if len(p) > 0 {
			s.bytesRecv += uint64(len(p))
			s.logRecv()
			if s.reqChunked {
				o.b = http1.AppendChunkHeader(o.b, len(p))
				_ = o.write(p)
				_ = o.writeString(http1.CRLF)
			} else {
				_ = o.write(p)
			}
			if o.err != nil {
				return o.err, false
			}
			if pieces > 0 {
				now := time.Now()
				s.down.touch(now)
				if tm.stale(now) {
					_ = uc.SetDeadline(tm.deadline(now))
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if o.err != nil {
				return o.err, false
			}
			return err, true
		}
	}
	s.requestEnded()
	var trailers http.Header
	if s.reqChunked && cl.HTTP1Trailers() {
		trailers = s.requestTrailers()
	}
	switch {
	case len(trailers) > 0 && o.err == nil:
		o.b = appendTrailerSection(o.b, trailers, cl.HTTP1Format().ProperCase)
	case s.reqChunked:
		_ = o.writeString(http1.LastChunk)
	}
	return o.err, false
}

// readResponseHead reads the upstream's response head into s.up.resp,
// skipping interim (1xx) responses, and returns its body framing.
func (s *stream) readResponseHead(uc *upstream.Conn) (http1.BodyKind, error) {
	return s.readResponseHeadUntil(uc, false)
}

// readResponseHeadUntil is readResponseHead; with stopAt100, a 100
// Continue ends it too (see continueWait).
func (s *stream) readResponseHeadUntil(uc *upstream.Conn, stopAt100 bool) (http1.BodyKind, error) {
	return s.readResponseHeadInto(s.up, uc, stopAt100)
}

// readResponseHeadInto is readResponseHeadUntil into u, which a hedged
// attempt has of its own (see hedge.go); it reads only fields of s that
// stay put while the request is in flight.
func (s *stream) readResponseHeadInto(u *upstreamScratch, uc *upstream.Conn, stopAt100 bool) (http1.BodyKind, error) {
	for {
		head, err := http1.ReadHead(uc.R, u.head, u.maxHead)
		if err != nil {
			return 0, err
		}
		u.head = head
		if u.preserveCase() {
			u.raw = append(u.raw[:0], head...)
		}
		if err := http1.ParseResponse(head, &u.resp, s.m.cfg.maxHeadersCount); err != nil {
			return 0, err
		}
		switch {
		case u.resp.Status == 101:
			if s.upg.typ != "" && !s.upg.connect {
				// The upgrade was accepted: a tunnel follows.
				return http1.BodyNone, nil
			}
			// A switch nobody asked for is a broken upstream.
			return 0, http1.ErrStatusCode
		case u.resp.Status == 100 && stopAt100:
			return http1.BodyNone, nil
		case u.resp.Status < 200:
			continue
		}
		return u.resp.BodyKind(s.isHead), nil
	}
}

// sentNothingBack reports whether a response head failed because the
// upstream closed the connection before sending a byte.
func sentNothingBack(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isConnReset(err)
}

// upstreamFailed answers a request whose upstream response head did not
// come: timeouts, resets and protocol errors, with Envoy's statuses, flags
// and bodies. sendErr is the error that stopped sending the request, if
// any.
func (s *stream) upstreamFailed(cl UpstreamCluster, err error, tm *upstreamTimer, sendErr error) {
	if s.downstreamReset() {
		return
	}
	// The answer's write deadline counts from now, not from when the
	// request went out.
	s.tLast = time.Now()
	cs := cl.Stats()
	var pe *http1.Error
	switch {
	case isTimeoutErr(err) && s.maxDurationReached(s.tLast):
	case isTimeoutErr(err) && tm.hardExpired(time.Now()):
		s.outlierTimeout()
		s.routeTimedOut(cl)
	case isTimeoutErr(err) && s.perTryExpired(time.Now()):
		s.perTryTimedOut(cl)
	case isTimeoutErr(err) && tm.idleTry:
		s.perTryIdleTimedOut(cl)
	case isTimeoutErr(err):
		s.m.stats.rqIdleTimeout.Inc()
		status := 504
		if s.body != nil && !s.bodyDone {
			// As Envoy's stream idle timeout: 408 before the request
			// is complete (an upstream that neither answered an
			// Expect: 100-continue nor got the body).
			status = 408
		}
		s.localReply(status, bodyStreamTimeout, accesslog.StreamIdleTimeout, "stream_idle_timeout")
	case errors.As(err, &pe):
		s.outlierReset()
		s.chargeCode(cs, 502)
		s.localReply(502, bodyProtocolError, accesslog.UpstreamProtocolError, "upstream_reset_before_response_started{protocol_error}")
	default:
		if sendErr != nil {
			err = sendErr
		}
		s.entry.UpstreamTransportFailureReason = err.Error()
		s.outlierReset()
		s.chargeCode(cs, 503)
		s.localReply(503, bodyTermination, accesslog.UpstreamConnectionTermination, "upstream_reset_before_response_started{connection_termination}")
	}
}

// responseBodyFailed cuts a response whose body broke off upstream.
func (s *stream) responseBodyFailed(cl UpstreamCluster, err error, tm *upstreamTimer) {
	if s.downstreamReset() {
		s.chargeCode(cl.Stats(), s.status)
		return
	}
	cs := cl.Stats()
	noteHTTP1Error(cs, err)
	if isTimeoutErr(err) && s.maxDurationReached(time.Now()) {
		s.chargeCode(cs, s.status)
		return
	}
	s.m.stats.rqResetAfterStart.Inc()
	switch {
	case isTimeoutErr(err) && tm.hardExpired(time.Now()):
		s.chargeTimeout(cs)
		s.host.Stats.RqTimeout.Add(1)
		s.flags |= accesslog.UpstreamRequestTimeout
		s.details = "upstream_response_timeout"
	case isTimeoutErr(err) && tm.idleTry:
		cs.Retries().PerTryIdleTimeout().Inc()
		s.flags |= accesslog.UpstreamRequestTimeout
		s.details = "upstream_per_try_idle_timeout"
	case isTimeoutErr(err):
		s.m.stats.rqIdleTimeout.Inc()
		s.flags |= accesslog.StreamIdleTimeout
		s.details = "stream_idle_timeout"
	default:
		s.outlierReset()
		s.flags |= accesslog.UpstreamConnectionTermination
		s.details = "upstream_reset_after_response_started{connection_termination}"
	}
	s.chargeCode(cs, s.status)
	s.resetDownstream()
}

// requestBodyFailed handles a request body that could not be read from the
// client: a timeout (answered 408 if nothing was sent yet), a malformed
// chunked body (400), or the client gone.
func (s *stream) requestBodyFailed(err error) {
	var (
		pe *http1.Error
		be *httpfilter.BodyError
	)
	s.connectionUnusable()
	switch {
	case errors.As(err, &be):
		// A filter refused the body it transforms.
		s.bodyErrorReply(be)
	case isTimeoutErr(err):
		s.bodyTimedOut()
	case errors.As(err, &pe):
		s.m.stats.cxProtocolError.Inc()
		s.localReply(pe.Status, http1.StatusText(pe.Status), accesslog.DownstreamProtocolError, "http1.codec_error")
	case s.conn == nil:
		// HTTP/2: the stream was reset (by the client, counted when
		// the frame came, or by the server for a bad body) or the
		// connection ended.
		if !s.downstreamReset() {
			s.flags |= accesslog.DownstreamProtocolError
			s.details = "http2.invalid_body"
			s.down.abort()
		}
	default:
		s.m.stats.rqRxReset.Inc()
		s.conn.destroyedActive()
		s.conn.remoteClosed = true
		s.flags |= accesslog.DownstreamConnectionTermination
		s.details = "downstream_remote_disconnect"
		s.down.abort()
	}
}

// bodyTimedOut answers a request whose body stopped arriving: the request
// timeout or the stream idle timeout fired, whichever is due.
func (s *stream) bodyTimedOut() {
	s.tLast = time.Now()
	if s.maxDurationReached(s.tLast) {
		return
	}
	if t := s.m.cfg.requestTimeout; t > 0 && s.tLast.Sub(s.t0) >= t {
		s.m.stats.rqTimeout.Inc()
		s.localReply(408, bodyRequestTimeout, 0, "request_overall_timeout")
		return
	}
	s.m.stats.rqIdleTimeout.Inc()
	s.localReply(408, bodyStreamTimeout, accesslog.StreamIdleTimeout, "stream_idle_timeout")
}
