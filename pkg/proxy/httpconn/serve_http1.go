package httpconn

import (
	"errors"
	"io"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
)

// init binds a connection's stream to the connection and to the exchange
// state it belongs to, once per exchange.
func (s *stream) init(m *Manager, c *serverConn, x *h1Exchange) {
	s.m = m
	s.connID, s.remote, s.remoteIP, s.local, s.origDst = c.id, c.remote, c.remoteIP, c.local, c.origDst
	s.tls, s.sni, s.direct, s.chain = c.tls, c.sni, c.direct, c.chain
	s.ja3, s.ja4 = c.ja3, c.ja4
	s.up = &x.up
	s.connSource, s.connUpCtx = c.source, c.upCtx
	s.down = c
	s.flushDown = x.flushDown
	s.conn = c
	s.connState, s.netState = &c.filterState, c.netState
	// Bound once per connection: the upstream pool asks it while the
	// request waits for a connection.
	s.clientGone = c.goneFn
}

// serveRequest serves one request whose first byte has arrived. It
// returns whether the connection may carry another request.
func (c *serverConn) serveRequest() bool {
	if keep, done := c.readRequest(); done {
		return keep
	}
	return c.forwardRequest()
}

// readRequest reads and parses a request's head, answers it when it is
// refused (done), and otherwise prepares its body for forwardRequest.
func (c *serverConn) readRequest() (keep, done bool) {
	m := c.m
	cfg := &m.cfg
	x := c.exchange()
	s := &x.st
	now := time.Now()
	s.begin(now, protoHTTP11)
	c.x.out.reset(c.cc)
	if c.cc.tcp != nil {
		c.x.out.pw = c.cc
	}
	c.chunked, c.closeDelimited, c.aborted = false, false, false
	x.trailer = nil
	// The request head is read under the stream idle timeout, counted
	// from its first byte and kept lazily (it may fire slackOf early),
	// and under the request and request headers timeouts and the
	// maximum stream duration when configured, which are exact.
	c.reqHard = after(now, cfg.requestTimeout)
	streamIdle := c.streamIdle()
	idleDeadline := after(now, streamIdle)
	headDeadline := earliest(earliest(idleDeadline, c.reqHard), earliest(after(now, cfg.requestHeadersTimeout), s.durationEnd))
	if c.rd.needWithin(headDeadline, idleSlack(headDeadline, idleDeadline, streamIdle)) {
		_ = c.nc.SetReadDeadline(headDeadline)
	}

	head, err := http1.ReadRequestHead(c.br, x.head, cfg.maxRequestHeadersBytes)
	x.head = head
	if err != nil {
		c.headFailed(err)
		return false, c.refused()
	}
	req := &x.req
	if cfg.keyFormat.PreserveCase {
		s.cases.keepRawHead(head)
	}
	if err := http1.ParseRequest(head, req, http1.RequestOptions{MaxHeaders: m.cfg.maxHeadersCount, AllowChunkedLength: m.cfg.allowChunkedLength, KeepAbsoluteURL: m.cfg.keepAbsoluteURL}); err != nil {
		c.protocolError(err)
		return false, c.refused()
	}
	if req.HasBody() {
		// The body is read under the stream idle timeout counted from
		// the head's end, and what is left of the request timeout and
		// the maximum stream duration.
		c.armRead(time.Now())
	}
	if req.Version == http1.HTTP10 {
		s.proto = protoHTTP10
		s.entry.Protocol = protoHTTP10
	}
	authority := view(req.Authority)
	if authority == "" && req.Version == http1.HTTP10 {
		authority = m.cfg.defaultHostHTTP10
	}
	s.setRequest(view(req.Method), view(req.Path), authority)
	s.keepAlive = req.KeepAlive
	switch {
	case req.Version == http1.HTTP10 && !m.cfg.acceptHTTP10:
		// Envoy refuses HTTP/1.0 unless accept_http_10 is set.
		c.protocolError(&http1.Error{Status: 426, Reason: "http/1.0 not accepted"})
		return false, c.refused()
	case authority == "":
		c.protocolError(http1.ErrMissingHost)
		return false, c.refused()
	}
	s.copyRequestHeaders(req)
	if cfg.keyFormat.PreserveCase {
		s.noteRequestCases(head, req)
	}
	s.detectUpgradeHTTP1(req)
	if s.upg.connect && req.HasBody() {
		// A CONNECT's payload follows its head unframed; Envoy's codec
		// refuses one that announces a body.
		c.protocolError(&http1.Error{Status: 400, Reason: "connect with a body"})
		return false, c.refused()
	}
	s.reqLength, s.reqChunked, s.expect100 = req.ContentLength, req.Chunked, req.Expect100
	switch {
	case req.Chunked:
		x.body.Reset(c.br, http1.BodyChunked, 0, maxTrailerBytes, x.flushUp)
		if cfg.enableTrailers {
			x.body.KeepTrailers(cfg.maxHeadersCount)
		}
		s.body = &x.body
	case req.ContentLength > 0:
		x.body.Reset(c.br, http1.BodyLength, req.ContentLength, 0, x.flushUp)
		s.body = &x.body
	default:
		s.requestEnded()
	}
	return false, false
}

// refused ends a request readRequest answered: the connection carries
// no other.
func (c *serverConn) refused() bool {
	s := &c.x.st
	s.end()
	c.lastNow = s.tLast
	return true
}

// forwardRequest forwards a request readRequest read and answers it. It
// returns whether the connection may carry another request.
func (c *serverConn) forwardRequest() bool {
	m := c.m
	s := &c.x.st
	defer func() { c.lastNow = s.tLast }()
	if max := m.cfg.maxRequestsPerConnection; max > 0 && c.requests+1 >= max {
		// The last request the connection may carry: say so in its
		// response.
		s.closeConn = true
		m.stats.cxMaxRequests.Inc()
	}
	if s.prepareRequest() {
		s.decode()
	}
	s.end()
	return !s.closeConn
}

// idleSlack is the slack of a read deadline d (see slackOf): that of the
// stream idle timeout streamIdle when d is idle, its deadline; none when d
// is a hard limit (the request or request headers timeout), which must
// neither fire early nor be taken for the stream idle timeout.
func idleSlack(d, idle time.Time, streamIdle time.Duration) time.Duration {
	if d.Equal(idle) {
		return slackOf(streamIdle)
	}
	return 0
}

// streamIdle is the connection manager's stream idle timeout in force,
// scaled by the overload manager's reduce_timeouts.
func (c *serverConn) streamIdle() time.Duration {
	return c.m.scaleStreamIdle(c.m.cfg.streamIdleTimeout)
}

// headFailed handles a request head that could not be read: a timeout, a
// protocol error, or the client going away.
func (c *serverConn) headFailed(err error) {
	s := &c.x.st
	s.keepAlive = false
	m := c.m
	switch {
	case isTimeout(err):
		s.tLast = time.Now()
		elapsed := s.tLast.Sub(s.t0)
		switch {
		case s.maxDurationReached(s.tLast):
		case m.cfg.requestTimeout > 0 && elapsed >= m.cfg.requestTimeout:
			m.stats.rqTimeout.Inc()
			s.localReply(408, bodyRequestTimeout, 0, "request_overall_timeout")
		case m.cfg.requestHeadersTimeout > 0 && elapsed >= m.cfg.requestHeadersTimeout:
			m.stats.rqHeaderTimeout.Inc()
			s.localReply(408, bodyHeaderTimeout, 0, "request_header_timeout")
		default:
			m.stats.rqIdleTimeout.Inc()
			s.localReply(408, bodyStreamTimeout, accesslog.StreamIdleTimeout, "stream_idle_timeout")
		}
	case errors.Is(err, io.EOF), errors.Is(err, http1.ErrTruncatedHead), !isProtocolError(err):
		c.remoteClosed = true
		m.stats.rqRxReset.Inc()
		c.destroyedActive()
		s.flags |= accesslog.DownstreamConnectionTermination
		s.details = "downstream_remote_disconnect"
	default:
		c.protocolError(err)
	}
}

// isProtocolError reports whether err is the client's fault.
func isProtocolError(err error) bool {
	var pe *http1.Error
	return errors.As(err, &pe)
}

// protocolError answers a malformed request as Envoy's codec does: the
// status the error calls for, its reason phrase as the body, and the
// connection closed.
func (c *serverConn) protocolError(err error) {
	s := &c.x.st
	status := http1.StatusOf(err)
	c.m.stats.cxProtocolError.Inc()
	s.keepAlive = false
	s.closeConn = true
	s.localReply(status, http1.StatusText(status), accesslog.DownstreamProtocolError, "http1.codec_error")
}

// writeHead implements downstream: it serialises the head into the output
// buffer, where the body's first bytes join it.
func (c *serverConn) writeHead(s *stream, n int64, hasBody bool) error {
	c.writeIdle = s.idleTimeout()
	c.armWrite(s.tLast)
	if !s.closeConn && c.maxDurationPassed(s.tLast) {
		// max_connection_duration passed: this response is the
		// connection's last, and says so.
		s.closeConn = true
	}
	start := len(c.x.out.b)
	var b []byte
	if s.cases.respOn && len(s.cases.reason) > 0 {
		// forward_reason_phrase: the upstream's reason.
		b = http1.AppendStatusLineReason(c.x.out.b, s.status, s.cases.reason)
	} else {
		b = http1.AppendStatusLine(c.x.out.b, http1.HTTP11, s.status)
	}
	for i := range s.respHeaders.fields {
		f := &s.respHeaders.fields[i]
		b = http1.AppendHeaderString(b, f.name, f.value)
	}
	switch {
	case !hasBody || n >= 0:
		if n >= 0 {
			b = http1.AppendContentLength(b, n)
		}
	case s.proto == protoHTTP11:
		b = append(b, "transfer-encoding: chunked\r\n"...)
		c.chunked = true
	default:
		// An HTTP/1.0 client knows no chunks: the body ends with the
		// connection.
		s.closeConn = true
		c.closeDelimited = true
	}
	switch {
	case s.upg.tunnel:
		// The connection carries the tunnel now (Envoy adds no
		// Connection: close to an upgrade's or CONNECT's response).
	case s.closeConn:
		b = append(b, "connection: close\r\n"...)
	case s.proto == protoHTTP10:
		b = append(b, "connection: keep-alive\r\n"...)
	}
	c.x.out.b = append(b, http1.CRLF...)
	switch {
	case s.cases.respOn:
		// The upstream's spellings travel with the response, whatever
		// the connection manager's format, as Envoy's stateful
		// formatter does.
		s.formatResponseNames(c.x.out.b[start:])
	case c.m.cfg.properCase:
		http1.ProperCaseNames(c.x.out.b[start:])
	}
	return nil
}

// writeBody implements downstream.
func (c *serverConn) writeBody(p []byte) error {
	if c.aborted {
		return errAborted
	}
	if c.chunked {
		c.x.out.b = http1.AppendChunkHeader(c.x.out.b, len(p))
		_ = c.x.out.write(p)
		return c.x.out.writeString(http1.CRLF)
	}
	return c.x.out.write(p)
}

// writeLastBody is writeBody for the last piece of a body, after which
// the response only flushes (see outBuf.writeLast).
func (c *serverConn) writeLastBody(p []byte) error {
	if c.aborted {
		return errAborted
	}
	if c.chunked {
		return c.writeBody(p)
	}
	return c.x.out.writeLast(p)
}

// writeBodyString implements downstream. Local replies, its only users,
// announce their length, so the body is never chunked.
func (c *serverConn) writeBodyString(p string) error {
	if c.aborted {
		return errAborted
	}
	return c.x.out.writeString(p)
}

// finish implements downstream.
func (c *serverConn) finish() error {
	if c.aborted {
		return errAborted
	}
	switch {
	case c.chunked && len(c.x.trailer) > 0:
		c.x.out.b = appendTrailerSection(c.x.out.b, c.x.trailer, c.m.cfg.properCase)
	case c.chunked:
		_ = c.x.out.writeString(http1.LastChunk)
	}
	return c.x.out.flush()
}

// abort implements downstream: what was not sent yet is dropped, and the
// connection closes after the stream, so the client sees the response
// break off.
func (c *serverConn) abort() {
	c.aborted = true
	c.x.out.b = c.x.out.b[:0]
}

// flush implements downstream.
func (c *serverConn) flush() error { return c.x.out.flush() }

// gone implements downstream: a peek at the socket.
func (c *serverConn) gone() bool { return peerGone(c.nc) }

// continue100 implements downstream.
func (c *serverConn) continue100() error {
	if !c.x.req.Expect100 {
		return nil
	}
	_ = c.x.out.writeString(http1.Continue)
	if err := c.x.out.flush(); err != nil {
		return err
	}
	c.m.stats.recordInterim()
	return nil
}

// awaitBody implements downstream: a peek at the connection, under the
// read deadline armed for the body.
func (c *serverConn) awaitBody() error {
	if c.br.Buffered() > 0 {
		return nil
	}
	_, err := c.br.Peek(1)
	return err
}

// awaitMore waits, as awaitBody, for bytes beyond those buffered (a
// full buffer fails at once with bufio.ErrBufferFull).
func (c *serverConn) awaitMore() error {
	_, err := c.br.Peek(c.br.Buffered() + 1)
	return err
}

// cancelAwait implements downstream: a read deadline in the past ends the
// peek. The socket's deadline is safe to set from another goroutine; the
// record of it (c.rd) is left to endAwait, on the stream's.
func (c *serverConn) cancelAwait() { _ = c.nc.SetReadDeadline(time.Unix(1, 0)) }

// endAwait implements downstream: the body's read deadline again.
func (c *serverConn) endAwait() {
	c.rd.forget()
	c.armRead(time.Now())
}

// touch implements downstream: activity pushes the idle deadlines back,
// lazily (see slackOf); the request timeout and the maximum stream
// duration stay exact.
func (c *serverConn) touch(now time.Time) {
	c.armRead(now)
	c.armWrite(now)
}

// armRead sets the read deadline of the request being read at now: the
// stream idle timeout, lazily, or the request timeout or the stream's
// maximum duration, exactly, whichever comes first.
func (c *serverConn) armRead(now time.Time) {
	streamIdle := c.streamIdle()
	idle := after(now, streamIdle)
	if d := earliest(idle, earliest(c.reqHard, c.x.st.durationLimit())); c.rd.needWithin(d, idleSlack(d, idle, streamIdle)) {
		_ = c.nc.SetReadDeadline(d)
	}
}

// armWrite sets the write deadline of the response at now: the stream
// idle timeout, lazily, or the stream's maximum duration, exactly.
func (c *serverConn) armWrite(now time.Time) {
	idle := after(now, c.writeIdle)
	if d := earliest(idle, c.x.st.writeLimit()); c.wd.needWithin(d, idleSlack(d, idle, c.writeIdle)) {
		_ = c.nc.SetWriteDeadline(d)
	}
}

// errAborted is returned by writes after a response was cut.
var errAborted = errors.New("response aborted")
