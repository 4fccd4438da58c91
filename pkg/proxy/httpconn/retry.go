package httpconn

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// resetReason is why an attempt ended without a response, as Envoy's
// retry state tells resets apart.
type resetReason uint8

const (
	// resetConnectFailure: no connection to the host could be opened.
	resetConnectFailure resetReason = iota
	// resetRemote: the upstream closed or reset the exchange, or broke
	// the protocol.
	resetRemote
	// resetRefusedStream: an HTTP/2 upstream refused the stream.
	resetRefusedStream
	// resetPerTryTimeout: the attempt's per_try_timeout passed (Envoy
	// resets the attempt locally).
	resetPerTryTimeout
)

// retryState is a request's retry bookkeeping, Envoy's RetryStateImpl:
// kept in the stream by value, so that a request whose route has no
// retry policy (and no retry headers) costs one check of active.
type retryState struct {
	// used: initRetries found a policy or retry headers. Only then is
	// any field but attempts written (every other writer runs for an
	// active state or a per-try timeout, which only such a request has),
	// so that reset clears the whole state only then.
	used   bool
	active bool
	// hedge: hedge_on_per_try_timeout (the route's, or the request's
	// x-envoy-hedge-on-per-try-timeout) for a request that may be
	// retried: a per-try timeout starts another attempt beside the one
	// in flight (see hedge.go).
	hedge  bool
	policy *router.RetryPolicy
	on     router.RetryOn
	// remaining is how many retries are left.
	remaining uint32
	// codes are the retriable status codes: the policy's, then those of
	// x-envoy-retriable-status-codes (then in codeBuf).
	codes   []uint32
	codeBuf []uint32
	// headerNames are x-envoy-retriable-header-names' names.
	headerNames []string
	// attempts counts the attempts made (x-envoy-attempt-count).
	attempts int
	// timeoutRetry: the retry under way was started by a per-try
	// timeout (x-envoy-is-timeout-retry).
	timeoutRetry bool
	// held: a unit of the cluster's retry breaker is held for the retry
	// in flight.
	held bool
	// heldHigh: the unit held is of the HIGH priority's breaker.
	heldHigh bool
	// backoffCap is the exponential back-off's current ceiling;
	// rateLimited, when not 0, is the next back-off drawn from a
	// response's reset header.
	backoffCap  time.Duration
	rateLimited time.Duration
	// tried are the hosts of the previous attempts (previous_hosts).
	tried []*upstream.Host
	// priorAttempts counts the hosts attempted, seenPrio marks their
	// priority levels and excluded is the set the picks leave out
	// (retry_priority previous_priorities).
	priorAttempts      int
	seenPrio, excluded []bool
	// body records the request body for the next attempt (nil without
	// a body); spare is the one the stream reuses from request to
	// request.
	body  *retryBody
	spare *retryBody
	// routeEnd is the route timeout's deadline, fixed by the first
	// attempt, that retries do not move; perTry is each attempt's
	// per_try_timeout; perTryEnd the current attempt's deadline.
	routeEnd    time.Time
	routeEndSet bool
	perTry      time.Duration
	perTryEnd   time.Time
	// perTryIdle is per_try_idle_timeout (0: none); timers are an
	// HTTP/2 attempt's per-try timers while it runs.
	perTryIdle time.Duration
	timers     *h2TryTimers
	// status is the response status a header check reads as ":status".
	status int
	resp   *headerList
	buf    []byte
}

// reset forgets the previous request's state, keeping the buffers.
func (r *retryState) reset() {
	r.attempts = 0
	if !r.used {
		return
	}
	clear(r.tried)
	*r = retryState{codeBuf: r.codeBuf[:0], tried: r.tried[:0], buf: r.buf, spare: r.spare,
		seenPrio: r.seenPrio[:0], excluded: r.excluded[:0]}
}

// maxKeptBody bounds the body buffer a stream keeps for its next
// request: a bigger one is let go.
const maxKeptBody = 64 << 10

// keepBody readies the stream's reusable retry body for src.
func (s *stream) keepBody(src bodySource) *retryBody {
	r := &s.retry
	b := r.spare
	if b == nil {
		b = new(retryBody)
		r.spare = b
	}
	buf := b.buf[:0]
	if cap(buf) > maxKeptBody {
		buf = nil
	}
	*b = retryBody{src: src, buf: buf, limit: s.bufferLimit(), abandoned: s.cluster.Stats()}
	return b
}

// Get answers a retriable_headers matcher on the response: ":status",
// then the response's fields.
func (r *retryState) Get(name string) (string, bool) {
	if name == ":status" {
		r.buf = strconv.AppendInt(r.buf[:0], int64(r.status), 10)
		return view(r.buf), true
	}
	return r.resp.Get(name)
}

// initRetries reads the route's retry policy and the request's retry and
// timeout headers (Envoy's RetryStateImpl::create and finalTimeout), and
// removes those headers, which never go upstream. It runs before the
// request's route timeout is used.
func (s *stream) initRetries() {
	r := &s.retry
	h := &s.reqHeaders
	p := s.route.RetryPolicy
	if cp := s.clPolicies; cp != nil && cp.Retry != nil {
		p = cp.Retry
	}
	// One pass finds whether the request has any of the headers; most
	// have none, and the lookups and the removal below are skipped.
	has := h.hasRetryHeaders()
	// respect_expected_rq_timeout: the expected timeout an upstream
	// proxy sent wins over x-envoy-upstream-rq-timeout-ms.
	expected := s.m.filters.respectExpectedTimeout && s.expectedTimeout()
	if p == nil && !has {
		// The common case: nothing to read.
		return
	}
	r.used = true
	var hdrOn router.RetryOn
	if has {
		if v, ok := h.Get("x-envoy-retry-on"); ok {
			hdrOn, _ = router.ParseRetryOn(v)
		}
		if v, ok := h.Get("x-envoy-retry-grpc-on"); ok {
			on, _ := router.ParseRetryGrpcOn(v)
			hdrOn |= on
		}
	}
	if (p != nil || hdrOn != 0) && s.upg.typ == "" && !s.upg.connect {
		// Upgrades and tunnels are never retried.
		s.startRetries(p, hdrOn, has)
	}
	if !has {
		s.dropPerTryAtRouteTimeout()
		return
	}
	if v, ok := h.Get("x-envoy-upstream-rq-timeout-ms"); ok && !expected {
		if ms, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
			s.rqTimeout = time.Duration(ms) * time.Millisecond
		}
	}
	if v, ok := h.Get("x-envoy-upstream-rq-per-try-timeout-ms"); ok {
		if ms, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
			r.perTry = time.Duration(ms) * time.Millisecond
		}
	}
	s.dropPerTryAtRouteTimeout()
	h.dropRetryHeaders()
}

// dropPerTryAtRouteTimeout: as in Envoy, a per-try timeout at or past
// the route timeout does not apply. Without a per-try timeout (or
// per-try idle timeout), hedging has nothing to do.
func (s *stream) dropPerTryAtRouteTimeout() {
	r := &s.retry
	if r.perTry > 0 && s.rqTimeout > 0 && r.perTry >= s.rqTimeout {
		r.perTry = 0
	}
	if r.perTry == 0 && r.perTryIdle == 0 {
		r.hedge = false
	}
}

// startRetries sets up the retry state of a request its route's policy p
// (maybe nil) or its headers (hdrOn) make retriable; has tells whether
// the request has any of the retry headers.
func (s *stream) startRetries(p *router.RetryPolicy, hdrOn router.RetryOn, has bool) {
	r := &s.retry
	h := &s.reqHeaders
	r.policy = p
	r.remaining = 1
	if p != nil {
		r.on = p.RetryOn
		r.remaining = p.NumRetries
		r.codes = p.RetriableStatusCodes
		r.perTry = p.PerTryTimeout
		r.perTryIdle = p.PerTryIdleTimeout
		if !p.Retriable(&s.rreq) {
			// retriable_request_headers: this request is not one.
			hdrOn, r.on = 0, 0
		}
	}
	r.on |= hdrOn
	if r.on == 0 {
		return
	}
	r.active = true
	r.hedge = s.route.HedgeOnPerTryTimeout
	if !has {
		return
	}
	// As Envoy's finalHedgingParams: exactly "true" or "false" overrides
	// the route's.
	if v, ok := h.Get("x-envoy-hedge-on-per-try-timeout"); ok {
		switch v {
		case "true":
			r.hedge = true
		case "false":
			r.hedge = false
		}
	}
	if v, ok := h.Get("x-envoy-max-retries"); ok {
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
			r.remaining = uint32(n)
		}
	}
	if v, ok := h.Get("x-envoy-retriable-status-codes"); ok {
		r.codeBuf = append(r.codeBuf[:0], r.codes...)
		for code := range strings.SplitSeq(v, ",") {
			if n, err := strconv.ParseUint(strings.TrimSpace(code), 10, 32); err == nil {
				r.codeBuf = append(r.codeBuf, uint32(n))
			}
		}
		r.codes = r.codeBuf
	}
	if v, ok := h.Get("x-envoy-retriable-header-names"); ok {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.ToLower(strings.TrimSpace(name)); name != "" {
				r.headerNames = append(r.headerNames, strings.Clone(name))
			}
		}
	}
}

// keepRetryBody wraps the request body of a request that may be retried,
// so that it is kept for the next attempt. It runs once per request,
// after anything else that wraps the body for the whole request (the
// mirrors' copy), which the replays of a retry must not pass through.
func (s *stream) keepRetryBody() {
	if s.retry.active && s.body != nil {
		s.keepBodyForRetries()
	}
}

func (s *stream) keepBodyForRetries() {
	s.retry.body = s.keepBody(s.body)
	s.body = s.retry.body
}

// hasRetryHeaders reports whether the request has one of the retry and
// timeout headers the router reads, in one pass over its fields.
func (h *headerList) hasRetryHeaders() bool {
	for i := range h.fields {
		if n := h.fields[i].name; strings.HasPrefix(n, "x-envoy-") && retryHeader(n) {
			return true
		}
	}
	return false
}

// dropRetryHeaders removes the retry and timeout headers in one pass,
// keeping the others in order.
func (h *headerList) dropRetryHeaders() {
	out := 0
	for i := range h.fields {
		if !retryHeader(h.fields[i].name) {
			h.fields[out] = h.fields[i]
			out++
		}
	}
	h.truncate(out)
}

// retryHeader reports whether name is one of the request headers the
// router consumes.
func retryHeader(name string) bool {
	switch name {
	case "x-envoy-retry-on", "x-envoy-retry-grpc-on", "x-envoy-max-retries",
		"x-envoy-hedge-on-per-try-timeout", "x-envoy-retriable-header-names",
		"x-envoy-retriable-status-codes", "x-envoy-upstream-rq-per-try-timeout-ms",
		"x-envoy-upstream-rq-timeout-ms":
		return true
	}
	return false
}

// baseInterval is the retry back-off's base interval: the policy's, else
// the runtime's upstream.base_retry_backoff_ms, else 25 ms.
func (s *stream) baseInterval() time.Duration {
	if p := s.retry.policy; p != nil && p.BackOffSet {
		return p.BaseInterval
	}
	if rt := s.m.deps.Runtime; rt != nil {
		return time.Duration(rt.Uint64("upstream.base_retry_backoff_ms", 25)) * time.Millisecond
	}
	return router.DefaultRetryBaseInterval
}

// maxInterval is the back-off's ceiling: the policy's max_interval, else
// ten times the base interval.
func (s *stream) maxInterval() time.Duration {
	if p := s.retry.policy; p != nil && p.BackOffSet {
		return p.MaxInterval
	}
	return 10 * s.baseInterval()
}

// retryable reports whether the request can still go out again: its
// body, if any, was read whole and kept.
func (r *retryState) retryable() bool {
	return r.active && (r.body == nil || r.bodyKept())
}

// bodyKept reports whether the request body was read whole and kept for
// another attempt.
func (r *retryState) bodyKept() bool {
	return r.body != nil && r.body.done.Load() && !r.body.over
}

// wouldRetryReset reports whether an attempt that ended with reason is to
// be retried (Envoy's wouldRetryFromReset); started tells whether
// anything of the request went to the upstream.
func (r *retryState) wouldRetryReset(reason resetReason, started bool) bool {
	on := r.on
	if reason == resetConnectFailure && on&router.RetryOnConnectFailure != 0 {
		return true
	}
	switch {
	case on&router.RetryOnResetBeforeRequest != 0 && !started:
		return true
	case on&(router.RetryOnReset|router.RetryOn5xx|router.RetryOnGatewayError) != 0:
		return true
	case on&router.RetryOnRefusedStream != 0 && reason == resetRefusedStream:
		return true
	}
	return false
}

// wouldRetryResponse reports whether a response whose status and headers
// (in s.respHeaders) came is to be retried (Envoy's wouldRetryFromHeaders).
func (s *stream) wouldRetryResponse(status int) bool {
	r := &s.retry
	on := r.on
	h := &s.respHeaders
	if h.Has("x-envoy-ratelimited") {
		return on&router.RetryOnEnvoyRateLimited != 0
	}
	switch {
	case on&router.RetryOn5xx != 0 && status >= 500 && status <= 599,
		on&router.RetryOnGatewayError != 0 && status >= 502 && status <= 504,
		on&router.RetryOnRetriable4xx != 0 && status == 409:
		return true
	}
	if on&router.RetryOnRetriableStatusCodes != 0 {
		for _, c := range r.codes {
			if int(c) == status {
				return true
			}
		}
	}
	if on&router.RetryOnRetriableHeaders != 0 {
		for _, name := range r.headerNames {
			if h.Has(name) {
				return true
			}
		}
		if r.policy != nil && len(r.policy.RetriableHeaders) > 0 {
			r.status, r.resp = status, h
			matched := r.policy.MatchesResponse(r)
			r.resp = nil
			if matched {
				return true
			}
		}
	}
	if on&router.RetryOnGrpc != 0 {
		if v, ok := h.Get("grpc-status"); ok {
			var bit router.RetryOn
			switch strings.TrimSpace(v) {
			case "1":
				bit = router.RetryOnGrpcCancelled
			case "4":
				bit = router.RetryOnGrpcDeadlineExceeded
			case "8":
				bit = router.RetryOnGrpcResourceExhausted
			case "13":
				bit = router.RetryOnGrpcInternal
			case "14":
				bit = router.RetryOnGrpcUnavailable
			}
			return on&bit != 0
		}
	}
	return false
}

// shouldRetry decides, once an attempt's outcome is known, whether the
// request goes out again (Envoy's shouldRetry): would says whether the
// outcome is retriable. It counts the retry stats and sets the response
// flags of a retry not made (URX, UO).
func (s *stream) shouldRetry(cl UpstreamCluster, would bool) bool {
	r := &s.retry
	rs := cl.Stats().Retries()
	if r.held {
		// The previous retry's outcome is known.
		r.held = false
		cl.ReleaseRetry(r.heldHigh)
		if !would {
			rs.Success().Inc()
			s.eachLevel(func(l *routeStats) { l.retrySuccess.Inc() })
		}
	}
	if !would {
		return false
	}
	if !r.retryable() {
		return false
	}
	if r.remaining == 0 {
		rs.LimitExceeded().Inc()
		s.eachLevel(func(l *routeStats) { l.retryLimitExceeded.Inc() })
		s.flags |= accesslog.UpstreamRetryLimitExceeded
		return false
	}
	r.remaining--
	r.heldHigh = s.route != nil && s.route.HighPriority
	if !cl.TryRetry(r.heldHigh) {
		rs.Overflow().Inc()
		s.eachLevel(func(l *routeStats) { l.retryOverflow.Inc() })
		s.flags |= accesslog.UpstreamOverflow
		return false
	}
	r.held, r.timeoutRetry = true, false
	rs.Retry().Inc()
	s.eachLevel(func(l *routeStats) { l.retry.Inc() })
	return true
}

// retryReset decides whether an attempt that ended without a response is
// retried; started tells whether the request went out.
func (s *stream) retryReset(cl UpstreamCluster, reason resetReason, started bool) bool {
	if !s.retry.active || !s.shouldRetry(cl, s.retry.wouldRetryReset(reason, started)) {
		return false
	}
	s.retry.timeoutRetry = reason == resetPerTryTimeout
	if s.ulog != nil {
		s.attemptReset(reason)
	}
	switch reason {
	case resetPerTryTimeout:
		s.outlierTimeout()
	case resetRemote, resetRefusedStream:
		s.outlierReset()
	}
	return true
}

// retryResponse decides whether an attempt whose response head came
// (status, with its headers in s.respHeaders) is retried; when it is, a
// rate-limited back-off is read from them (nextAttempt drops them).
func (s *stream) retryResponse(cl UpstreamCluster, status int) bool {
	return s.retry.active && s.retryActiveResponse(cl, status)
}

func (s *stream) retryActiveResponse(cl UpstreamCluster, status int) bool {
	would := s.wouldRetryResponse(status)
	if would {
		s.retry.rateLimited = s.resetInterval()
	}
	retried := s.shouldRetry(cl, would)
	if retried && s.ulog != nil {
		s.attemptRetried(status)
	}
	return retried
}

// resetInterval reads the back-off a rate-limited response asks for from
// the policy's reset headers (rate_limited_retry_back_off): the first
// that parses within the maximum; 0 for none.
func (s *stream) resetInterval() time.Duration {
	p := s.retry.policy
	if p == nil {
		return 0
	}
	for _, rh := range p.ResetHeaders {
		v, ok := s.respHeaders.Get(rh.Name)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			continue
		}
		d := time.Duration(n) * time.Second
		if rh.UnixTimestamp {
			d = time.Until(time.Unix(n, 0))
		}
		if d > 0 && d <= p.ResetMaxInterval {
			return d
		}
	}
	return 0
}

// nextBackOff draws the wait before the next attempt: from the
// rate-limited interval when a response set one (uniformly in [d, 1.5d),
// Envoy's jittered lower bound), else fully jittered exponential: uniform
// below a ceiling that starts at the base interval and doubles per retry
// up to the maximum.
func (s *stream) nextBackOff(rs upstream.RetryStats) time.Duration {
	r := &s.retry
	if d := r.rateLimited; d > 0 {
		r.rateLimited = 0
		rs.BackoffRatelimited().Inc()
		return d + time.Duration(rand.Int64N(int64(d)/2+1))
	}
	rs.BackoffExponential().Inc()
	ceiling := r.backoffCap
	if ceiling == 0 {
		// The first back-off: the base interval is read only now, as
		// most requests never back off.
		ceiling = s.baseInterval()
	}
	d := time.Duration(rand.Int64N(int64(ceiling)))
	if next := 2 * ceiling; next <= s.maxInterval() {
		r.backoffCap = next
	} else {
		r.backoffCap = s.maxInterval()
	}
	return min(d, s.maxInterval())
}

// backOff waits before the next attempt. It returns false when the
// request ended meanwhile: its route timeout passed (answered 504) or
// its client went away.
func (s *stream) backOff(cl UpstreamCluster) bool {
	d := s.nextBackOff(cl.Stats().Retries())
	end := time.Now().Add(d)
	if r := &s.retry; r.routeEndSet && !r.routeEnd.IsZero() && r.routeEnd.Before(end) {
		end = r.routeEnd
	}
	// The client's departure is noticed within a tenth of a second.
	const poll = 100 * time.Millisecond
	for {
		now := time.Now()
		if s.downstreamReset() {
			return false
		}
		if s.clientGone != nil && s.clientGone() {
			s.downstreamFailed()
			return false
		}
		if !now.Before(end) {
			break
		}
		time.Sleep(min(end.Sub(now), poll))
	}
	if r := &s.retry; r.routeEndSet && !r.routeEnd.IsZero() && !time.Now().Before(r.routeEnd) {
		s.releaseRetry(cl)
		s.routeTimedOut(cl)
		return false
	}
	return true
}

// releaseRetry gives back the retry breaker's unit a request still holds
// once it ends.
func (s *stream) releaseRetry(cl UpstreamCluster) {
	if s.retry.held {
		s.retry.held = false
		cl.ReleaseRetry(s.retry.heldHigh)
	}
}

// nextAttempt readies the request for another attempt: the body is
// replayed from its start, and the host just tried is avoided when the
// policy says so.
func (s *stream) nextAttempt() {
	r := &s.retry
	if r.body != nil {
		// The replayed bytes are counted once.
		s.bytesRecv -= uint64(len(r.body.buf))
		r.body.rewind()
	}
	s.forgetAttempt()
}

// forgetAttempt readies the request for another attempt but its body:
// the host just tried (s.host) is avoided when the policy says so, and
// the last attempt's response and failure are forgotten.
func (s *stream) forgetAttempt() {
	r := &s.retry
	if p := r.policy; p != nil && p.PreviousHosts {
		r.tried = append(r.tried, s.host)
		s.pick.PreviousHosts = r.tried
	}
	s.previousPriorities()
	s.respHeaders.reset()
	s.status, s.details = 0, ""
	s.flags &^= upstreamFailure | accesslog.UpstreamOverflow
	// The next attempt's idle deadlines count from now (the route
	// timeout's deadline is fixed already).
	s.tLast = time.Now()
}

// previousPriorities is Envoy's previous_priorities retry priority,
// told of the host just attempted: once update_frequency hosts have been
// attempted, and again after every update_frequency more, the priority
// levels of all the hosts attempted are left out of the next picks'
// priority load; between updates the last set stays.
func (s *stream) previousPriorities() {
	r := &s.retry
	p := r.policy
	if p == nil || p.PriorityUpdateFrequency == 0 || s.host == nil {
		return
	}
	r.priorAttempts++
	prio, known := int(s.host.Priority), true
	if pm, ok := s.cluster.(priorityMapper); ok {
		prio, known = pm.LinearPriority(s.host)
	}
	if known {
		for len(r.seenPrio) <= prio {
			r.seenPrio = append(r.seenPrio, false)
		}
		r.seenPrio[prio] = true
	}
	if r.priorAttempts%p.PriorityUpdateFrequency == 0 {
		r.excluded = append(r.excluded[:0], r.seenPrio...)
		s.pick.ExcludedPriorities = r.excluded
	}
}

// retryPredicates hands the retry policy's host predicates to the load
// balancer; they apply to every attempt of a request that may be retried,
// as in Envoy (previous_hosts has no host to avoid on the first).
func (s *stream) retryPredicates() {
	r := &s.retry
	if !r.active || r.policy == nil {
		return
	}
	p := r.policy
	s.pick.OmitCanary, s.pick.OmitMetadata = p.OmitCanary, p.OmitMetadata
	s.pick.HostReselections = int(min(p.HostSelectionMaxAttempts, 1<<20))
}

// routeDeadline is the route timeout's deadline for an attempt whose
// request ended at sent: the first attempt fixes it for the retries.
func (s *stream) routeDeadline(sent time.Time) time.Time {
	if !s.retry.active {
		return after(sent, s.rqTimeout)
	}
	return s.retryRouteDeadline(sent)
}

func (s *stream) retryRouteDeadline(sent time.Time) time.Time {
	r := &s.retry
	if !r.routeEndSet {
		r.routeEnd, r.routeEndSet = after(sent, s.rqTimeout), true
	}
	return r.routeEnd
}

// armPerTry starts the attempt's per_try_timeout at now, returning its
// deadline (zero: none).
func (s *stream) armPerTry(now time.Time) time.Time {
	r := &s.retry
	r.perTryEnd = after(now, r.perTry)
	return r.perTryEnd
}

// perTryExpired reports whether the attempt's per-try timeout, rather
// than the route's, has passed at now.
func (s *stream) perTryExpired(now time.Time) bool {
	r := &s.retry
	if r.perTryEnd.IsZero() || now.Before(r.perTryEnd) {
		return false
	}
	return r.routeEnd.IsZero() || now.Before(r.routeEnd)
}

// perTryTimedOut answers a request whose last attempt reached its
// per_try_timeout: 504, UT, as Envoy's onPerTryTimeout.
func (s *stream) perTryTimedOut(cl UpstreamCluster) {
	cs := cl.Stats()
	cs.Retries().PerTryTimeout().Inc()
	s.chargeTimeoutBudget(cs, s.sinceRequestEnd())
	s.outlierTimeout()
	s.host.Stats.RqTimeout.Add(1)
	s.chargeCode(cs, 504)
	s.localReply(504, bodyUpstreamTimeout, accesslog.UpstreamRequestTimeout, "upstream_per_try_timeout")
}

// perTryIdleTimedOut answers a request whose last attempt reached its
// per_try_idle_timeout before its response head: 504, UT.
func (s *stream) perTryIdleTimedOut(cl UpstreamCluster) {
	cs := cl.Stats()
	cs.Retries().PerTryIdleTimeout().Inc()
	s.chargeTimeoutBudget(cs, s.sinceRequestEnd())
	s.outlierTimeout()
	s.host.Stats.RqTimeout.Add(1)
	s.chargeCode(cs, 504)
	s.localReply(504, bodyUpstreamTimeout, accesslog.UpstreamRequestTimeout, "upstream_per_try_idle_timeout")
}

// armPerTryIdle makes the attempt's per_try_idle_timeout, when it is
// shorter, the idle timeout of an HTTP/1 exchange whose request was sent.
func (s *stream) armPerTryIdle(tm *upstreamTimer) {
	d := s.retry.perTryIdle
	if d <= 0 {
		return
	}
	if tm.idle <= 0 || d < tm.idle {
		tm.idle, tm.idleTry = d, true
	}
}

// eachLevel runs f on the request's virtual cluster and route stats.
func (s *stream) eachLevel(f func(*routeStats)) {
	for _, rs := range s.levelStats() {
		if rs != nil {
			f(rs)
		}
	}
}

// attemptCount is the number of attempts made so far, at least 1.
func (s *stream) attemptCount() int64 { return int64(max(s.retry.attempts, 1)) }

// retryFailedHTTP1 decides whether an HTTP/1 attempt whose response head
// did not come (err) is retried.
func (s *stream) retryFailedHTTP1(cl UpstreamCluster, err error, tm *upstreamTimer) bool {
	if !s.retry.active || s.downstreamReset() {
		return false
	}
	now := time.Now()
	switch {
	case isTimeoutErr(err) && (tm.hardExpired(now) || s.maxDurationReached(now)):
		return false
	case isTimeoutErr(err) && s.perTryExpired(now):
		if s.retryReset(cl, resetPerTryTimeout, true) {
			cl.Stats().Retries().PerTryTimeout().Inc()
			return true
		}
		return false
	case isTimeoutErr(err) && tm.idleTry:
		if s.retryReset(cl, resetPerTryTimeout, true) {
			cl.Stats().Retries().PerTryIdleTimeout().Inc()
			return true
		}
		return false
	case isTimeoutErr(err):
		// The stream idle timeout: not the upstream's failure.
		return false
	}
	return s.retryReset(cl, resetRemote, true)
}

// retryFailedHTTP2 decides whether an HTTP/2 attempt that failed before
// its response head (err) is retried.
func (s *stream) retryFailedHTTP2(cl UpstreamCluster, ctx context.Context, err error) bool {
	if !s.retry.active || s.downstreamReset() || s.bodyErr.Load() != nil || errors.Is(err, upstream.ErrOverflow) {
		return false
	}
	now := time.Now()
	var op *net.OpError
	switch {
	case s.retry.timers.idleFired():
		if s.retryReset(cl, resetPerTryTimeout, true) {
			cl.Stats().Retries().PerTryIdleTimeout().Inc()
			return true
		}
		return false
	case ctx.Err() != nil && s.perTryExpired(now):
		if s.retryReset(cl, resetPerTryTimeout, true) {
			cl.Stats().Retries().PerTryTimeout().Inc()
			return true
		}
		return false
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		// The route timeout or a maximum duration.
		return false
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, new(*tlsconfig.HandshakeError)):
		return s.retryReset(cl, resetConnectFailure, false)
	case strings.Contains(err.Error(), "REFUSED_STREAM"):
		return s.retryReset(cl, resetRefusedStream, true)
	}
	return s.retryReset(cl, resetRemote, true)
}

// h2TryTimers are an HTTP/2 attempt's per-try timeouts, timers that
// cancel the attempt's context: per_try_timeout until the response head,
// per_try_idle_timeout until the response's end, pushed back by each
// piece of the response.
type h2TryTimers struct {
	cancel    context.CancelFunc
	try, idle *time.Timer
	idleFor   time.Duration
	fired     atomic.Bool
}

// startTryTimers arms the attempt's per-try timeouts from now, returning
// the context they cancel; without per-try timeouts, ctx as it is and
// nil.
func (s *stream) startTryTimers(ctx context.Context, now time.Time) (context.Context, *h2TryTimers) {
	r := &s.retry
	s.armPerTry(now)
	if r.perTry <= 0 && r.perTryIdle <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &h2TryTimers{cancel: cancel, idleFor: r.perTryIdle}
	if r.perTry > 0 {
		t.try = time.AfterFunc(r.perTry, cancel)
	}
	if r.perTryIdle > 0 {
		t.idle = time.AfterFunc(r.perTryIdle, func() {
			t.fired.Store(true)
			cancel()
		})
	}
	r.timers = t
	return ctx, t
}

// headCame stops the per-try timeout once the response head came; false
// when it fired first. A nil t does nothing.
func (t *h2TryTimers) headCame(s *stream) bool {
	if t == nil || t.try == nil {
		return true
	}
	if !t.try.Stop() {
		return false
	}
	s.retry.perTryEnd = time.Time{}
	return true
}

// touch pushes the idle timeout back: the upstream sent something.
func (t *h2TryTimers) touch() {
	if t.idle != nil && !t.fired.Load() {
		t.idle.Reset(t.idleFor)
	}
}

// idleFired reports whether the per-try idle timeout ended the attempt;
// false for a nil t.
func (t *h2TryTimers) idleFired() bool { return t != nil && t.fired.Load() }

// stop ends the timers when the attempt is over.
func (t *h2TryTimers) stop(s *stream) {
	if t == nil {
		return
	}
	if t.try != nil {
		t.try.Stop()
	}
	if t.idle != nil {
		t.idle.Stop()
	}
	t.cancel()
	s.retry.timers = nil
}
