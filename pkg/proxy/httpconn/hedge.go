package httpconn

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Request hedging, Envoy's hedge_on_per_try_timeout: when an attempt's
// per_try_timeout passes before its response head, the attempt is not
// reset; another one starts (after the retry back-off, within
// num_retries and the max_retries breaker, whatever retry_on says) and
// every attempt in flight races for the response. The first response
// head that is not to be retried wins and the others are reset; a
// retriable one while another attempt is still in flight (or a retry is
// due) is dropped; the route timeout ends them all. A
// per_try_idle_timeout is one more such per-try timeout before the head,
// and none after it.
//
// The stream's goroutine runs the race: each attempt waits for its head
// in a goroutine of its own, which only reads the attempt's connection
// (or runs its HTTP/2 round trip) and writes the attempt's fields; the
// stream's goroutine sends the requests, decides and relays the winner.
// A request without hedging never gets here.

// hedgeTry is one attempt of a hedged request.
type hedgeTry struct {
	host *upstream.Host
	// cl carries the attempt (an aggregate's host's own cluster); ps
	// are its pool's stats, nil for the attempt that started the race,
	// whose caller (attempt) counts it.
	cl UpstreamCluster
	ps *upstream.ClusterStats
	h2 bool
	// retried: its per-try timeout started another attempt, so that its
	// own outcome is never retried (Envoy's retried_ upstream request).
	retried bool
	// timeoutRecorded: its per-try timeout was told to outlier
	// detection already.
	timeoutRecorded bool
	// perTryEnd is its per_try_timeout's (or per_try_idle_timeout's,
	// which under hedging is one more per-try timeout before the head,
	// and none after) deadline; zero once it fired (or without one).
	perTryEnd time.Time
	sent      time.Time
	// start is when the attempt began, for its per-try timeout budget
	// (track_cluster_stats): the stream's is the latest attempt's.
	start time.Time
	// An HTTP/1.1 attempt: its connection, head buffers and timer; the
	// body framing of its response.
	uc   *upstream.Conn
	u    *upstreamScratch
	tm   upstreamTimer
	kind http1.BodyKind
	// connectErr: no connection could be had (err). mayResend: the
	// request (without a body) went on a pooled connection, which may
	// turn out closed before it answered anything: that is no failure,
	// the request goes out again on another (as forwardHTTP1 does).
	connectErr, mayResend bool
	// An HTTP/2 attempt: its context, response and the request body the
	// transport reads (the first attempt's only).
	ctx    context.Context
	cancel context.CancelFunc
	resp   *http.Response
	body   *h2RequestBody
	got    atomic.Pointer[gotConn]
	// err is how the attempt failed before its head; done is closed once
	// its goroutine wrote the outcome; over: the race is done with it.
	err  error
	done chan struct{}
	over bool
	// released: hedgeDrop let its resources go.
	released bool
	// filters are its upstream filters, destroyed when the race is done
	// with it; the winner's go back to the stream for its response.
	filters []httpfilter.Filter
}

// hedger is the race of a hedged request's attempts.
type hedger struct {
	tries  []*hedgeTry
	route  *router.Route
	signal chan struct{}
	// base is the context of the HTTP/2 attempts it starts.
	base context.Context
	// pending: a retry is due at pendingAt, once its back-off ends.
	pending   bool
	pendingAt time.Time
}

func (s *stream) newHedger(base context.Context) *hedger {
	return &hedger{route: s.route, signal: make(chan struct{}, 1), base: base}
}

// destroyFilters ends the upstream filters of the attempts that still
// hold theirs.
func (h *hedger) destroyFilters() {
	for _, t := range h.tries {
		destroyAttemptFilters(t.filters)
		t.filters = nil
	}
}

// notify wakes the race up: an attempt's outcome is in.
func (h *hedger) notify() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

// finished reports whether the attempt's goroutine is done.
func (t *hedgeTry) finished() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// armOnBody arms the per-try timeout of the HTTP/2 attempt whose body
// the transport reads once that body is complete, counting from when it
// was (Envoy arms it at the request's end); it reports whether it still
// waits for the body.
func (t *hedgeTry) armOnBody(r *retryState) bool {
	if t.body == nil || !t.perTryEnd.IsZero() || t.retried || t.timeoutRecorded {
		return false
	}
	if !t.body.complete() {
		return true
	}
	t.perTryEnd = r.softDeadline(time.Unix(0, t.body.endedAt.Load()))
	return false
}

// waiting reports whether the race has something else to wait for than
// t: another attempt in flight or a retry due.
func (h *hedger) waiting(t *hedgeTry) bool {
	if h.pending {
		return true
	}
	for _, o := range h.tries {
		if o != t && !o.over {
			return true
		}
	}
	return false
}

// hedgesHTTP1 reports whether an HTTP/1.1 attempt of a request with
// hedging, whose request went out (sendErr the error that stopped it), is
// to race: once its whole body is kept for another attempt, and unless an
// Expect: 100-continue is proxied (cw). A body too big to keep gives up
// retries, and with them the per-try timeout, as under Envoy, whose
// hedging then leaves the attempt to the route timeout.
func (s *stream) hedgesHTTP1(cw *continueWait, sendErr error, tm *upstreamTimer) bool {
	if cw != nil || sendErr != nil {
		return false
	}
	if tm.idleTry {
		// As Envoy's, a per-try idle timeout under hedging resets
		// nothing: before the head the race treats it as a per-try
		// timeout.
		tm.idle, tm.idleTry = s.idleTimeout(), false
	}
	if !s.retry.retryable() {
		tm.perTry, s.retry.perTryEnd = time.Time{}, time.Time{}
		return false
	}
	return true
}

// hedgeHTTP1 runs the race from an HTTP/1.1 attempt whose request went out
// whole on uc at sent; tm is its timer. The race owns uc from here on.
func (s *stream) hedgeHTTP1(cl UpstreamCluster, uc *upstream.Conn, tm upstreamTimer, sent time.Time, mayResend bool) {
	h := s.newHedger(s.upstreamBase())
	t := &hedgeTry{host: s.host, cl: cl, uc: uc, u: s.up, tm: tm, sent: sent, mayResend: mayResend,
		perTryEnd: earliest(s.retry.perTryEnd, after(sent, s.retry.perTryIdle)), filters: s.takeUpstreamFilters(), start: s.track.start}
	s.retry.perTryEnd = time.Time{}
	h.tries = append(h.tries, t)
	s.launchHTTP1(h, t)
	s.hedgeRun(h)
	// The caller ends the first attempt.
	s.track.start = t.start
}

// hedgeHTTP2 runs the race from an HTTP/2 attempt to host about to be
// sent under ctx at now.
func (s *stream) hedgeHTTP2(cl UpstreamCluster, host *upstream.Host, ctx context.Context, now time.Time) {
	h := s.newHedger(ctx)
	t := &hedgeTry{host: host, cl: cl, h2: true, filters: s.takeUpstreamFilters(), start: s.track.start}
	t.ctx, t.cancel = context.WithCancel(ctx)
	req, body := s.upstreamRequest(t.ctx)
	t.body = body
	if body == nil {
		t.perTryEnd = s.retry.softDeadline(now)
	}
	h.tries = append(h.tries, t)
	s.launchHTTP2(h, t, req)
	s.hedgeRun(h)
	// The caller ends the first attempt.
	s.track.start = t.start
}

// launchHTTP1 waits for t's response head in a goroutine of its own.
func (s *stream) launchHTTP1(h *hedger, t *hedgeTry) {
	// The race, not the connection's deadline, keeps the per-try
	// timeout.
	t.tm.perTry = time.Time{}
	_ = t.uc.SetDeadline(t.tm.deadline(t.sent))
	t.done = make(chan struct{})
	go func() {
		t.kind, t.err = s.readResponseHeadInto(t.u, t.uc, false)
		noteHTTP1Head(t.cl.Stats(), &t.u.resp, t.err)
		close(t.done)
		h.notify()
	}()
}

// launchHTTP2 runs t's round trip in a goroutine of its own.
func (s *stream) launchHTTP2(h *hedger, t *hedgeTry, req *http.Request) {
	t.sent = time.Now()
	t.done = make(chan struct{})
	if s.readsUpstreamConn() {
		req = traceUpstreamConn(req, &t.got)
	}
	go func() {
		t.resp, t.err = t.cl.RoundTripHTTP2(req, t.host)
		close(t.done)
		h.notify()
	}()
}

// failedEarly records an attempt that failed before anything could wait
// for its head.
func (h *hedger) failedEarly(t *hedgeTry, err error) {
	t.err = err
	t.done = make(chan struct{})
	close(t.done)
	h.notify()
}

// hedgeRun runs the race until the request was answered (or its client
// left).
func (s *stream) hedgeRun(h *hedger) {
	// The attempts the race did not drop (one whose failure answered
	// the request) end with it.
	defer h.destroyFilters()
	w := s.wakeChan()
	poll := time.NewTicker(gonePollInterval)
	defer poll.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Stop()
		if at := s.hedgeNextEvent(h); !at.IsZero() {
			timer.Reset(time.Until(at))
		}
		gone := false
		select {
		case <-h.signal:
			if s.hedgeTimedOut() {
				// The attempts' own deadlines fired with it.
				s.hedgeRouteTimeout(h)
				return
			}
			if winner, ended := s.hedgeSettle(h); winner != nil {
				s.hedgeWon(h, winner)
				return
			} else if ended {
				return
			}
		case <-timer.C:
		case <-poll.C:
			gone = true
		case <-*w:
			gone = true
		}
		if gone && s.hedgeGone(h) {
			return
		}
		if s.hedgeTimedOut() {
			s.hedgeRouteTimeout(h)
			return
		}
		now := time.Now()
		for _, t := range h.tries {
			if !t.over && !t.perTryEnd.IsZero() && !now.Before(t.perTryEnd) {
				s.softPerTryTimeout(h, t)
			}
		}
		if h.pending && !now.Before(h.pendingAt) {
			h.pending = false
			if !s.hedgeStart(h) {
				return
			}
		}
	}
}

// hedgeTimedOut reports whether the route timeout passed.
func (s *stream) hedgeTimedOut() bool {
	end := s.retry.routeEnd
	return !end.IsZero() && !time.Now().Before(end)
}

// hedgeNextEvent is when the race has something to do next without an
// outcome: a per-try timeout, a retry due, the route timeout.
func (s *stream) hedgeNextEvent(h *hedger) time.Time {
	at := s.retry.routeEnd
	for _, t := range h.tries {
		if t.over {
			continue
		}
		if t.armOnBody(&s.retry) {
			// Looked at again at the next poll.
			at = earliest(at, time.Now().Add(gonePollInterval))
		}
		at = earliest(at, t.perTryEnd)
	}
	if h.pending {
		at = earliest(at, h.pendingAt)
	}
	return at
}

// hedgeGone ends the race when the client reset the stream or left.
func (s *stream) hedgeGone(h *hedger) bool {
	switch {
	case s.downstreamReset():
	case s.clientGone != nil && s.clientGone():
		s.downstreamFailed()
	default:
		return false
	}
	s.hedgeDropAll(h)
	return true
}

// softPerTryTimeout is a per-try timeout under hedging (Envoy's
// onSoftPerTryTimeout): t goes on, counted as a timeout for outlier
// detection, and another attempt is due if the retry budget allows
// (whatever retry_on says), URX or UO flagged otherwise. Neither
// upstream_rq_per_try_timeout nor the host's rq_timeout counts it.
func (s *stream) softPerTryTimeout(h *hedger, t *hedgeTry) {
	t.perTryEnd = time.Time{}
	t.timeoutRecorded = true
	s.host = t.host
	s.outlierTimeout()
	if s.shouldRetry(t.cl, true) {
		t.retried, s.retry.timeoutRetry = true, true
		s.hedgeSchedule(h, t.cl)
	}
}

// softDeadline is when an attempt whose request went out at from reaches
// its per-try timeout or per-try idle timeout under hedging.
func (r *retryState) softDeadline(from time.Time) time.Time {
	return earliest(after(from, r.perTry), after(from, r.perTryIdle))
}

// hedgeSchedule makes a retry due after the back-off.
func (s *stream) hedgeSchedule(h *hedger, cl UpstreamCluster) {
	h.pending = true
	h.pendingAt = time.Now().Add(s.nextBackOff(cl.Stats().Retries()))
}

// hedgeSettle looks at the outcomes that came in: it returns the winner,
// whose head is in the stream (s.status, s.respHeaders), or ended when
// the request was answered otherwise.
func (s *stream) hedgeSettle(h *hedger) (winner *hedgeTry, ended bool) {
	for i := 0; i < len(h.tries); i++ {
		t := h.tries[i]
		if t.over || !t.finished() {
			continue
		}
		t.over = true
		s.host = t.host
		if t.err != nil {
			if s.hedgeFailed(h, t) {
				return nil, true
			}
			continue
		}
		if s.hedgeHead(h, t) {
			return t, false
		}
	}
	return nil, false
}

// hedgeFailed handles an attempt that failed before its head, as Envoy's
// onUpstreamReset: retried if it may be, else dropped while the race has
// something else to wait for, else answered. It reports whether the
// request was answered.
func (s *stream) hedgeFailed(h *hedger, t *hedgeTry) bool {
	if t.mayResend && !t.h2 && t.uc != nil && sentNothingBack(t.err) {
		t.mayResend, t.over, t.err = false, false, nil
		t.cl.ReleaseHTTP1(t.uc, false)
		t.uc = nil
		s.startHedgeHTTP1(h, t, false)
		return false
	}
	retry := false
	if !t.retried {
		switch {
		case t.connectErr:
			retry = !errors.Is(t.err, upstream.ErrOverflow) && s.retryReset(t.cl, resetConnectFailure, false)
		case t.h2:
			retry = s.retryFailedHTTP2(t.cl, t.ctx, t.err)
		default:
			retry = s.retryFailedHTTP1(t.cl, t.err, &t.tm)
		}
	}
	if retry {
		s.hedgeSchedule(h, t.cl)
		s.hedgeDrop(t, true)
		return false
	}
	if h.waiting(t) {
		if !isTimeoutErr(t.err) {
			s.outlierReset()
		}
		s.hedgeDrop(t, true)
		return false
	}
	s.hedgeFocus(t)
	switch {
	case t.connectErr:
		s.connectFailed(t.cl, t.err)
	case t.h2:
		t.body.takeBack()
		s.h2UpstreamFailed(t.cl, t.ctx, t.err)
	default:
		s.upstreamFailed(t.cl, t.err, &t.tm, nil)
	}
	s.hedgeDrop(t, true)
	return true
}

// hedgeHead handles an attempt whose response head came, as Envoy's
// onUpstreamHeaders: a retriable head is retried (unless the attempt was
// retried already on its per-try timeout), or dropped while the race has
// something else to wait for; any other head wins. It reports whether t
// won.
func (s *stream) hedgeHead(h *hedger, t *hedgeTry) bool {
	status := 0
	if t.h2 {
		status = t.resp.StatusCode
		s.copyHTTP2ResponseHeaders(t.resp)
	} else {
		status = t.u.resp.Status
		s.copyResponseHeaders(t.u)
	}
	s.status = status
	s.outlierResponse()
	r := &s.retry
	would := s.wouldRetryResponse(status)
	if !t.retried {
		if would {
			r.rateLimited = s.resetInterval()
		}
		if s.shouldRetry(t.cl, would) {
			s.hedgeSchedule(h, t.cl)
			s.hedgeDrop(t, true)
			s.respHeaders.reset()
			s.status = 0
			return false
		}
	}
	if would && r.retryable() && h.waiting(t) {
		// A bad answer while another may still come.
		s.hedgeDrop(t, true)
		s.respHeaders.reset()
		s.status = 0
		return false
	}
	return true
}

// hedgeWon relays the winner's response after resetting the other
// attempts and forgetting any retry due.
func (s *stream) hedgeWon(h *hedger, w *hedgeTry) {
	w.released = true
	h.pending = false
	// The winner's upstream filters encode its response (see
	// encodeUpstream); the attempt that ran the race destroys them.
	s.destroyUpstreamFilters()
	s.upFilters, w.filters = w.filters, nil
	for _, t := range h.tries {
		if t != w && !t.over {
			s.hedgeDrop(t, true)
		}
	}
	s.hedgeFocus(w)
	if s.route.InternalRedirect != nil && s.followsRedirect(w.cl, s.status) {
		// Followed (see internal_redirect.go): the winner is dropped.
		w.released = false
		s.hedgeDrop(w, false)
		return
	}
	if w.h2 {
		s.noteUpstreamConn(&w.got)
		s.outlierConnected()
		// relayHTTP2 copies the head again.
		s.respHeaders.reset()
		s.relayHTTP2(w.cl, w.ctx, w.resp, w.sent, w.body)
		w.body.takeBack()
		_ = w.resp.Body.Close()
		w.cancel()
	} else {
		s.noteHTTP1Conn(w.uc)
		saved := s.up
		s.up = w.u
		s.upstream.Store(w.uc)
		now := time.Now()
		s.tLast = now
		s.upSent = w.sent
		reusable := s.relayHTTP1(w.cl, w.uc, w.kind, w.sent, now, &w.tm)
		s.up = saved
		w.cl.ReleaseHTTP1(w.uc, reusable)
	}
	if w.ps != nil {
		s.track.start = w.start
		s.endAttempt(w.cl, w.ps, w.host, s.status >= 500 || s.flags&upstreamFailure != 0)
	}
}

// hedgeFocus makes t the attempt the stream and its access log show.
func (s *stream) hedgeFocus(t *hedgeTry) {
	s.host = t.host
	s.entry.UpstreamHost = t.host.Address
	s.entry.UpstreamHostMetadata = t.host.Metadata
}

// hedgeRouteTimeout ends the race at the route timeout, as Envoy's
// onResponseTimeout: every attempt in flight is reset and counts a
// timeout and a 504 (and, unless its per-try timeout did already, an
// outlier detection timeout); the client gets 504, UT.
func (s *stream) hedgeRouteTimeout(h *hedger) {
	var last *hedgeTry
	for _, t := range h.tries {
		if t.over {
			continue
		}
		if last != nil {
			cs := last.cl.Stats()
			s.chargeTimeout(cs)
			s.chargeCode(cs, 504)
			last.host.Stats.RqTimeout.Add(1)
		}
		last = t
		s.host = t.host
		if !t.timeoutRecorded {
			s.outlierTimeout()
		}
	}
	h.pending = false
	if last == nil {
		// Only a retry was due.
		last = h.tries[len(h.tries)-1]
	}
	s.hedgeDropAll(h)
	s.hedgeFocus(last)
	s.routeTimedOut(last.cl)
}

// hedgeDropAll resets every attempt still in flight.
func (s *stream) hedgeDropAll(h *hedger) {
	h.pending = false
	for _, t := range h.tries {
		s.hedgeDrop(t, true)
	}
}

// hedgeDrop resets t, waits for its goroutine and lets its resources go;
// failed says how its host counts it. Dropping an attempt twice does
// nothing the second time.
func (s *stream) hedgeDrop(t *hedgeTry, failed bool) {
	t.over = true
	if t.released {
		return
	}
	t.released = true
	if !t.finished() {
		if t.h2 {
			t.cancel()
		} else {
			_ = t.uc.SetDeadline(time.Unix(1, 0))
		}
	}
	<-t.done
	if t.h2 {
		if t.resp != nil {
			_ = t.resp.Body.Close()
			t.resp = nil
		}
		t.body.takeBack()
		t.cancel()
	} else if t.uc != nil {
		t.cl.ReleaseHTTP1(t.uc, false)
	}
	destroyAttemptFilters(t.filters)
	t.filters = nil
	if t.ps != nil {
		// A dropped attempt got no response head of its own.
		start, head := s.track.start, s.track.respHead
		s.track.start, s.track.respHead = t.start, -1
		s.endAttempt(t.cl, t.ps, t.host, failed)
		s.track.start, s.track.respHead = start, head
	}
}

// hedgeStart starts another attempt once a retry is due. It returns false
// when the request was answered instead (no healthy host).
func (s *stream) hedgeStart(h *hedger) bool {
	prev := h.tries[len(h.tries)-1]
	s.host = prev.host
	s.forgetAttempt()
	host := s.cluster.PickHost(&s.pick)
	if host == nil {
		s.hedgeDropAll(h)
		status := s.noHostStatus()
		s.chargeCode(s.cluster.Stats(), status)
		s.localReply(status, bodyNoHealthyUpstream, accesslog.NoHealthyUpstream, "no_healthy_upstream")
		return false
	}
	s.rewindAttemptBody()
	cl, ps := s.beginAttempt(s.cluster, h.route, host)
	if s.upAnswered {
		// An upstream filter of this attempt answered the request: the
		// race is over, as for Envoy, whose upstream filters' local
		// replies go downstream at once.
		s.endAttempt(cl, ps, host, s.status >= 500)
		s.hedgeDropAll(h)
		return false
	}
	t := &hedgeTry{host: host, cl: cl, ps: ps, h2: cl.HTTP2For(s.proto == protoHTTP2), filters: s.takeUpstreamFilters(), start: s.track.start}
	h.tries = append(h.tries, t)
	if t.h2 {
		s.startHedgeHTTP2(h, t)
	} else {
		s.startHedgeHTTP1(h, t, true)
	}
	return true
}

// startHedgeHTTP1 sends the request again, whole, on a connection to
// t.host, and waits for the head; perTry arms its per-try timeout (not
// for a request sent again on a fresh connection, see hedgeFailed).
func (s *stream) startHedgeHTTP1(h *hedger, t *hedgeTry, perTry bool) {
	r := &s.retry
	ctx, cancel := s.connectContext()
	defer cancel()
	uc, err := t.cl.AcquireHTTP1For(ctx, t.host, s.acquire(r.routeEnd))
	if err != nil {
		t.connectErr = true
		h.failedEarly(t, err)
		return
	}
	s.outlierConnected()
	t.uc = uc
	// A request without a body may go out again if a pooled
	// connection turns out closed before it answered anything.
	t.mayResend = s.body == nil && uc.Requests > 1
	t.u = &upstreamScratch{maxHead: t.cl.MaxResponseHeadBytes(), keys: t.cl.HTTP1Format()}
	t.tm = upstreamTimer{idle: s.idleTimeout(), limit: s.durationLimit(), hard: r.routeEnd}
	_ = uc.SetDeadline(t.tm.deadline(time.Now()))
	t.u.out.reset(uc)
	s.appendRequestHead(&t.u.out, t.u.keys)
	if r.body != nil {
		// The replayed bytes are counted once.
		s.bytesRecv -= uint64(len(r.body.buf))
		r.body.rewind()
	}
	err, _ = s.sendRequestBody(&t.u.out, &t.tm, uc, t.cl)
	if err == nil {
		err = t.u.out.flush()
	}
	t.sent = time.Now()
	if perTry {
		t.perTryEnd = r.softDeadline(t.sent)
	}
	if err != nil {
		h.failedEarly(t, err)
		return
	}
	s.launchHTTP1(h, t)
}

// startHedgeHTTP2 sends the request again over HTTP/2 to t.host, its body
// from the copy kept whole for retries.
func (s *stream) startHedgeHTTP2(h *hedger, t *hedgeTry) {
	r := &s.retry
	if end := r.routeEnd; !end.IsZero() {
		t.ctx, t.cancel = context.WithDeadline(h.base, end)
	} else {
		t.ctx, t.cancel = context.WithCancel(h.base)
	}
	req, body := s.upstreamRequest(t.ctx)
	if body != nil {
		// A copy: the transport may read on after the attempt was
		// reset, and the stream reuses its buffer for its next request.
		// The attempt's upstream filters' decoders run on it first.
		req.Body = io.NopCloser(bytes.NewReader(s.attemptBodyCopy(r.body.buf)))
		for k, vs := range s.requestTrailers() {
			if req.Trailer != nil {
				req.Trailer[k] = vs
			}
		}
	}
	t.perTryEnd = r.softDeadline(time.Now())
	s.launchHTTP2(h, t, req)
}

// noteHTTP1Conn records the HTTP/1.1 connection the response comes on.
func (s *stream) noteHTTP1Conn(uc *upstream.Conn) {
	if uc.LocalAddress == "" {
		// Once per connection: the address does not change.
		uc.LocalAddress = string(appendAddr(nil, uc.LocalAddr()))
	}
	s.entry.UpstreamLocalAddress = uc.LocalAddress
	s.entry.UpstreamTLS = accesslog.UpstreamTLS(uc.Conn)
}
