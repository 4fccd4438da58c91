package httpconn

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// forwardHTTP2 sends the request over the cluster's HTTP/2 pool and relays
// the response. It returns true when the attempt's outcome is to be
// retried (see retry.go), having answered nothing.
func (s *stream) forwardHTTP2(cl UpstreamCluster, host *upstream.Host) (retry bool) {
	ctx := s.withAutoSNI(s.upstreamBase(), cl)
	// The exchange ends at the route timeout (fixed by the first
	// attempt), the attempt's per-try timeout or at the stream's maximum
	// durations, the cluster's counted from here: the pool hands the
	// request a connection within the round trip.
	now := time.Now()
	s.armUpstreamDuration(cl, now)
	// One derived context carries both the deadline and what an HTTP/2
	// client's reset cancels.
	var cancel context.CancelFunc
	if d := earliest(s.routeDeadline(now), s.durationLimit()); !d.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, d)
	} else {
		// Cancelled by an HTTP/2 client's reset, or by the sweep that
		// finds an HTTP/1 client gone (awaitsweep.go).
		ctx, cancel = context.WithCancel(ctx)
	}
	if cancel != nil {
		s.armReset(cancel)
		defer func() {
			s.disarmReset()
			cancel()
		}()
	}
	if s.expect100 {
		// Answered here, before the transport's goroutine reads the
		// body, so that only this goroutine writes to the client.
		s.expect100 = false
		if err := s.down.continue100(); err != nil {
			s.downstreamFailed()
			return false
		}
	}
	if s.retry.hedge {
		s.hedgeHTTP2(cl, host, ctx, now)
		return false
	}
	ctx, timers := s.startTryTimers(ctx, now)
	defer timers.stop(s)
	// The transport reads the body in its own goroutine; the body source
	// belongs to the downstream connection, which the stream takes back
	// (body.takeBack) before it answers on its own or ends.
	req, body := s.upstreamRequest(ctx)
	sent := time.Now()
	var got *atomic.Pointer[gotConn]
	if s.readsUpstreamConn() {
		got = new(atomic.Pointer[gotConn])
		req = traceUpstreamConn(req, got)
	}
	if s.conn != nil {
		s.conn.beginUpstreamWait()
	}
	resp, err := cl.RoundTripHTTP2(req, host)
	if s.conn != nil {
		s.conn.endUpstreamWait()
	}
	s.noteUpstreamConn(got)
	if err == nil && s.m.uplog != nil {
		// Go's transport hides when the stream got its connection:
		// the entry comes with the head.
		s.poolReadyLog()
	}
	if err != nil {
		// The transport may return while its goroutine still waits for
		// the body: a local reply must not read the body beside it.
		body.takeBack()
		if !s.peerReset.Load() && !s.peerClosed.Load() && s.maxDurationReachedWith(time.Now(), body.complete()) {
			return false
		}
		if s.retryFailedHTTP2(cl, ctx, err) {
			return true
		}
		s.h2UpstreamFailed(cl, ctx, err)
		return false
	}
	if s.retry.active {
		s.copyHTTP2ResponseHeaders(resp)
		if s.retryResponse(cl, resp.StatusCode) {
			s.status = resp.StatusCode
			s.outlierResponse()
			s.respHeaders.reset()
			body.takeBack()
			_ = resp.Body.Close()
			return true
		}
		// relayHTTP2 copies them again.
		s.respHeaders.reset()
	}
	if s.route.InternalRedirect != nil && s.redirectHTTP2(cl, resp, body) {
		return false
	}
	if !timers.headCame(s) {
		// The per-try timeout fired as the head came: the attempt
		// failed.
		body.takeBack()
		_ = resp.Body.Close()
		if s.retryFailedHTTP2(cl, ctx, context.Canceled) {
			return true
		}
		s.h2UpstreamFailed(cl, ctx, context.Canceled)
		return false
	}
	s.outlierConnected()
	defer func() {
		// Before the response body's Close, which waits for the
		// transport's goroutine to leave the request body's Read.
		body.takeBack()
		_ = resp.Body.Close()
	}()
	s.relayHTTP2(cl, ctx, resp, sent, body)
	return false
}

// relayHTTP2 relays an HTTP/2 upstream's response, whose head came, to the
// client; sent is when the request went out, ctx the exchange's, body the
// request body the transport may still be reading (nil for none).
func (s *stream) relayHTTP2(cl UpstreamCluster, ctx context.Context, resp *http.Response, sent time.Time, body *h2RequestBody) {
	now := time.Now()
	s.tLast = now
	s.upSent = sent
	s.entry.FirstUpstreamByte = s.m.stamp(now)
	s.status = resp.StatusCode
	s.details = "via_upstream"
	s.copyHTTP2ResponseHeaders(resp)
	s.outlierResponse()
	s.setServiceTime(now.Sub(sent))
	// A response whose HEADERS ended the upstream stream (a gRPC
	// trailers-only answer: grpc-status in the head) has no body: the
	// transport says so with a zero length and no content-length. The
	// client must see the stream end with the head too, or a gRPC client
	// finds no status.
	endedWithHead := resp.ContentLength == 0 && len(resp.Header.Values("Content-Length")) == 0
	hasBody := !s.isHead && s.status != 204 && s.status != 304 && !endedWithHead
	n, hasBody := s.mutateUpstreamResponse(resp.ContentLength, hasBody)
	if !body.complete() {
		// An answer before the whole request: as in Envoy, an HTTP/1
		// connection ends after it (Connection: close), since the rest
		// of the body is not read once the exchange ends.
		s.connectionUnusable()
	}
	if err := s.sendHead(n, hasBody); err != nil {
		if err != errRecreated {
			// Recreated: the caller resets the upstream stream.
			s.downstreamFailed()
		}
		return
	}
	if hasBody {
		buf := make([]byte, h2BodyBuffer)
		var received int64
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if t := s.retry.timers; t != nil {
					t.touch()
				}
				// The last piece, when the read or the announced
				// length says so: its write waits under the flush
				// timeout.
				s.produced = errors.Is(err, io.EOF) || (resp.ContentLength >= 0 && received+int64(n) >= resp.ContentLength)
				received += int64(n)
				if err := s.down.writeBody(buf[:n]); err != nil {
					s.downstreamFailed()
					return
				}
				if t := s.retry.timers; t != nil && s.xdown.throttled {
					// The throttle held the upstream while it
					// metered this piece out.
					t.touch()
				}
				s.bytesSent += uint64(n)
				s.logSent()
				if n < len(buf) {
					// The upstream had no more at hand: let what
					// came go on before waiting.
					if err := s.down.flush(); err != nil {
						s.downstreamFailed()
						return
					}
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				if !s.peerReset.Load() && s.maxDurationReachedWith(time.Now(), body.complete()) {
					s.chargeCode(cl.Stats(), s.status)
					return
				}
				s.h2BodyFailed(cl, ctx, err)
				return
			}
		}
	}
	if len(resp.Trailer) > 0 {
		s.respTrailers = resp.Trailer
		s.down.trailers(resp.Trailer)
	}
	if err := s.down.finish(); err != nil {
		s.downstreamFailed()
		return
	}
	cs := cl.Stats()
	s.chargeCode(cs, s.status)
	s.chargeTime(cs, time.Since(sent))
}

// copyHTTP2ResponseHeaders copies an HTTP/2 upstream's response headers
// but the hop-by-hop ones into the response.
func (s *stream) copyHTTP2ResponseHeaders(resp *http.Response) {
	for k, vs := range resp.Header {
		name := strings.ToLower(k)
		if hopByHopResponse([]byte(name)) {
			continue
		}
		for _, v := range vs {
			s.respHeaders.Add(name, v)
		}
	}
}

// upstreamRequest builds the net/http request the HTTP/2 pool sends.
func (s *stream) upstreamRequest(ctx context.Context) (*http.Request, *h2RequestBody) {
	req := &http.Request{
		Method:        strings.Clone(s.method),
		URL:           s.upstreamURL(),
		Host:          strings.Clone(s.upAuthority),
		Header:        s.upstreamHeader(0),
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		ContentLength: 0,
	}
	if s.teTrailers {
		// The one TE value HTTP/2 allows (RFC 9113 §8.2.2); gRPC
		// servers require it.
		req.Header["Te"] = []string{"trailers"}
	}
	var body *h2RequestBody
	if s.body != nil {
		body = &h2RequestBody{s: s, inRead: make(chan struct{}, 1)}
		req.Body = body
		if s.mayEndWithTrailers() {
			// Declared empty so that the transport ends the body
			// with whatever trailers Read puts there at its end (or
			// an empty DATA frame); an empty map announces none in
			// the head.
			req.Trailer = make(http.Header)
			body.trailer = req.Trailer
		}
		req.ContentLength = s.reqLength
		if s.reqChunked {
			req.ContentLength = -1
		}
	}
	return req.WithContext(ctx), body
}

// upstreamHeader copies the request's fields into a header for Go's
// HTTP/2 client, with room for extra more. Copies, because that client
// keeps the strings it indexes in its HPACK table for the connection's
// life, and the stream's are views of buffers later requests reuse: a
// view changed under the table makes the encoder send an index that the
// server decodes to an earlier request's value.
func (s *stream) upstreamHeader(extra int) http.Header {
	h := make(http.Header, len(s.reqHeaders.fields)+extra)
	for _, f := range s.reqHeaders.fields {
		k := http.CanonicalHeaderKey(strings.Clone(f.name))
		h[k] = append(h[k], strings.Clone(f.value))
	}
	return h
}

// upstreamURL is the request's path for Go's HTTP/2 client, a copy (see
// upstreamHeader), passed on as received when Go's parser disagrees with
// ours.
func (s *stream) upstreamURL() *url.URL {
	return pathURL(strings.Clone(s.upPath))
}

// h2BodyBuffer is the read size of an HTTP/2 upstream's response body.
const h2BodyBuffer = 32 << 10

// h2RequestBody feeds the request body to the HTTP/2 transport, whose
// goroutine calls Read and Close. The body source belongs to the
// downstream connection: once the exchange ends, takeBack makes sure that
// goroutine is out of it for good, so the connection can recycle its
// buffers and read its next request.
type h2RequestBody struct {
	s   *stream
	p   []byte
	err error
	// inRead holds a token while a Read runs: takeBack takes it to know
	// none does.
	inRead chan struct{}
	// takenBack is set by takeBack: Reads fail from then on, without
	// touching the source.
	takenBack atomic.Bool
	// eof is set once the whole body was read: the transport's goroutine
	// sets it, the stream's reads it while that goroutine may still run;
	// endedAt (Unix nanoseconds) is when, set before it.
	eof     atomic.Bool
	endedAt atomic.Int64
	// trailer is the request's Trailer map, filled at the body's end
	// with the client's trailers.
	trailer http.Header
}

// errBodyTakenBack is what the transport reads after takeBack.
var errBodyTakenBack = errors.New("request body no longer forwarded")

// complete reports whether the whole request body has arrived; true
// without a body (a nil b).
func (b *h2RequestBody) complete() bool { return b == nil || b.eof.Load() }

// Read copies the next pieces of the request body into p.
func (b *h2RequestBody) Read(p []byte) (int, error) {
	b.inRead <- struct{}{}
	defer func() { <-b.inRead }()
	if b.takenBack.Load() {
		return 0, errBodyTakenBack
	}
	for len(b.p) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.p, b.err = b.s.body.Next()
		if errors.Is(b.err, io.EOF) {
			b.s.requestEnded()
			b.endedAt.Store(time.Now().UnixNano())
			b.eof.Store(true)
			// Before EOF reaches the transport, which then reads
			// the trailers.
			if b.trailer != nil {
				for k, vs := range b.s.requestTrailers() {
					b.trailer[k] = vs
				}
			}
		}
		b.s.bytesRecv += uint64(len(b.p))
		b.s.logRecv()
	}
	n := copy(p, b.p)
	b.p = b.p[n:]
	return n, nil
}

// Close is called by the transport when it is done with the body, maybe
// from a goroutine of its own while Read still runs: takeBack, not Close,
// tells when the source is free.
func (b *h2RequestBody) Close() error { return nil }

// takeBack ends the transport's reading of the request body, on the
// stream's goroutine, once the exchange is over or before a local reply:
// a body still to come is abandoned (a Read waiting for the client wakes
// up with an error), and takeBack returns when no Read runs, later ones
// failing at once. The wait is bounded by the stream idle timeout; past
// it the stream counts the source as leaked and its buffers are not
// reused. A nil b does nothing.
func (b *h2RequestBody) takeBack() {
	if b == nil || b.takenBack.Swap(true) {
		return
	}
	if !b.eof.Load() && !b.s.retry.bodyKept() {
		// A body kept for a retry has been read whole: nothing to
		// abandon.
		b.s.down.abandonBody()
	}
	idle := b.s.idleTimeout()
	if idle <= 0 {
		idle = defaultStreamIdleTimeout
	}
	t := time.NewTimer(idle)
	defer t.Stop()
	select {
	case b.inRead <- struct{}{}:
		<-b.inRead
	case <-t.C:
		b.s.leaked = true
	}
}

// h2UpstreamFailed answers a request whose HTTP/2 upstream exchange failed
// before a response head.
func (s *stream) h2UpstreamFailed(cl UpstreamCluster, ctx context.Context, err error) {
	if s.downstreamReset() {
		return
	}
	if be := s.bodyErr.Load(); be != nil {
		// A filter refused the request body, which failed the exchange.
		s.connectionUnusable()
		s.bodyErrorReply(be)
		return
	}
	cs := cl.Stats()
	var op *net.OpError
	switch {
	case errors.Is(err, upstream.ErrOverflow):
		s.overflowed(cl)
	case s.retry.timers.idleFired():
		s.perTryIdleTimedOut(cl)
	case ctx.Err() != nil && s.perTryExpired(time.Now()):
		s.perTryTimedOut(cl)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		s.outlierTimeout()
		s.routeTimedOut(cl)
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, new(*tlsconfig.HandshakeError)), errors.As(err, new(*upstream.LocalConnectError)):
		s.connectFailed(cl, err)
	case isPeerReset(err):
		s.entry.UpstreamTransportFailureReason = err.Error()
		s.outlierReset()
		s.chargeCode(cs, 503)
		s.localReply(503, bodyRemoteReset, accesslog.UpstreamRemoteReset, "upstream_reset_before_response_started{remote_reset}")
	default:
		s.entry.UpstreamTransportFailureReason = err.Error()
		s.outlierReset()
		s.chargeCode(cs, 503)
		s.localReply(503, bodyTermination, accesslog.UpstreamConnectionTermination, "upstream_reset_before_response_started{connection_termination}")
	}
}

// h2BodyFailed cuts a response whose HTTP/2 body broke off.
func (s *stream) h2BodyFailed(cl UpstreamCluster, ctx context.Context, err error) {
	if s.downstreamReset() {
		s.chargeCode(cl.Stats(), s.status)
		return
	}
	if s.bodyErr.Load() != nil {
		s.details = s.bodyErr.Load().Details
	}
	cs := cl.Stats()
	s.m.stats.rqResetAfterStart.Inc()
	if s.retry.timers.idleFired() {
		cs.Retries().PerTryIdleTimeout().Inc()
		s.flags |= accesslog.UpstreamRequestTimeout
		s.details = "upstream_per_try_idle_timeout"
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.chargeTimeout(cs)
		s.host.Stats.RqTimeout.Add(1)
		s.flags |= accesslog.UpstreamRequestTimeout
		s.details = "upstream_response_timeout"
	} else {
		s.outlierReset()
		s.flags |= accesslog.UpstreamRemoteReset
		s.details = "upstream_reset_after_response_started{remote_reset}"
		s.entry.UpstreamTransportFailureReason = err.Error()
	}
	s.chargeCode(cs, s.status)
	s.resetDownstream()
}
