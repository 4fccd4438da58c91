package httpconn

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
)

// h2Stream is one HTTP/2 request and its response. The connection's read
// loop fills in the request; the stream's goroutine runs it through the
// filters and the router, writing the response as frames. Streams are
// recycled, with their buffers, between requests of all connections.
type h2Stream struct {
	s  stream
	up upstreamScratch
	h  *h2Conn
	id uint32
	// cond is signalled, under h.mu, when the stream's body, windows or
	// state change.
	cond sync.Cond
	// wake broadcasts cond; bound once, for timers.
	wake func()

	// The request, as the read loop decodes it.
	method, path, authority, scheme, host string
	// protocol is the :protocol of an extended CONNECT (RFC 8441).
	protocol                        string
	fields                          []field
	hbuf                            []byte // the decoded names and values the fields show (see keep)
	cookies                         int
	declared                        int64 // content-length, -1 without one
	headerBytes                     int
	sawRegular, tooLarge            bool
	teTrailers, expect100           bool
	endStream, refused, lastAllowed bool
	t0                              time.Time

	// State shared with the read loop, under h.mu. responded: the
	// response head went out (a stream reset after that is not
	// premature).
	remoteDone, localDone, reset, waitingWindow, responded bool
	// awaitCancelled ends awaitBody (see cancelAwait).
	awaitCancelled                      bool
	recvWindow, recvUnacked, sendWindow int64
	received                            int64
	in                                  []byte // body bytes received and not yet read
	bodyErr                             error

	// The stream goroutine's own.
	out          []byte // the body piece Next returned last
	hblock       []byte // header block scratch
	nameBuf      []byte
	cookieBuf    []byte
	lastActivity time.Time
	// lastData is the offset in h.wbuf of the stream's last DATA frame,
	// valid while h.wgen is lastGen: finish sets END_STREAM on it
	// rather than sending an empty frame.
	lastData int
	lastGen  uint64
	trailer  http.Header
	// reqTrailer are the request's trailers, set with remoteDone under
	// h.mu.
	reqTrailer http.Header
}

// newH2Stream prepares a recyclable stream of m.
func newH2Stream(m *Manager) *h2Stream {
	st := &h2Stream{}
	st.s.m = m
	st.s.up = &st.up
	st.s.down = st
	st.s.flushDown = st.flush
	st.wake = func() {
		h := st.h
		h.mu.Lock()
		st.cond.Broadcast()
		h.mu.Unlock()
	}
	return st
}

// open readies a recycled stream for a new request on h.
func (st *h2Stream) open(h *h2Conn, id uint32, endStream, refused bool) {
	c := h.c
	st.h, st.id = h, id
	st.cond.L = &h.mu
	st.s.connID, st.s.remote, st.s.remoteIP, st.s.local, st.s.origDst = c.id, c.remote, c.remoteIP, c.local, c.origDst
	st.s.tls, st.s.sni, st.s.direct, st.s.chain = c.tls, c.sni, c.direct, c.chain
	st.s.ja3, st.s.ja4 = c.ja3, c.ja4
	st.s.connSource, st.s.connUpCtx = c.source, c.upCtx
	st.s.connState, st.s.netState = &c.filterState, c.netState
	st.method, st.path, st.authority, st.scheme, st.host = "", "", "", "", ""
	st.protocol = ""
	clear(st.fields)
	st.fields = st.fields[:0]
	if cap(st.hbuf) > maxKeptHeaderBuf {
		// One unusually large request head does not stay with the
		// recycled stream.
		st.hbuf = nil
	}
	st.hbuf = st.hbuf[:0]
	st.cookies, st.declared, st.headerBytes = 0, -1, 0
	st.sawRegular, st.tooLarge, st.teTrailers, st.expect100 = false, false, false, false
	st.awaitCancelled = false
	st.endStream, st.refused, st.lastAllowed = endStream, refused, false
	st.t0 = time.Now()
	st.remoteDone, st.localDone, st.reset, st.waitingWindow = endStream, false, false, false
	st.responded = false
	st.recvWindow, st.recvUnacked = int64(h.m.cfg.h2.streamWindow), 0
	st.sendWindow = int64(h.peerWindow)
	st.received, st.bodyErr = 0, nil
	st.in, st.out = st.in[:0], st.out[:0]
	st.lastActivity = st.t0
	st.lastData, st.trailer, st.reqTrailer = -1, nil, nil
}

// maxKeptHeaderBuf is the largest hbuf a recycled stream keeps.
const maxKeptHeaderBuf = 16 << 10

// keep copies a decoded string into the stream's buffer and returns a view
// of the copy, valid until the stream is recycled. The buffer grows by
// appending: views taken before it moved still show its old array, which
// nothing writes again.
func (st *h2Stream) keep(s string) string {
	if s == "" {
		return ""
	}
	n := len(st.hbuf)
	st.hbuf = append(st.hbuf, s...)
	return view(st.hbuf[n:])
}

// keepName is keep for a field name: the pseudo-header names the request
// knows are constants already (addField keeps only their values).
func (st *h2Stream) keepName(name string) string {
	if name != "" && name[0] == ':' {
		return name
	}
	return st.keep(name)
}

// addField checks and records one decoded request field; false means the
// request is malformed (RFC 9113 §8.2 and §8.3).
func (st *h2Stream) addField(name, value string) bool {
	if name == "" {
		return false
	}
	if name[0] == ':' {
		if st.sawRegular {
			return false
		}
		var dst *string
		switch name {
		case ":method":
			dst = &st.method
		case ":path":
			dst = &st.path
		case ":scheme":
			dst = &st.scheme
		case ":authority":
			dst = &st.authority
		case ":protocol":
			if !st.h.m.cfg.h2.allowConnect {
				// Only a server that announced extended CONNECT
				// takes it.
				return false
			}
			dst = &st.protocol
		default:
			return false
		}
		if *dst != "" || value == "" {
			return false
		}
		*dst = value
		return validValue(value) && st.obsTextAllowed(value)
	}
	st.sawRegular = true
	if !validName(name) || !validValue(value) || !st.obsTextAllowed(value) {
		return false
	}
	st.headerBytes += len(name) + len(value) + 32
	if st.headerBytes > st.h.m.cfg.maxRequestHeadersBytes || len(st.fields) >= st.h.m.cfg.maxHeadersCount {
		st.tooLarge = true
		return true
	}
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		// Connection-specific fields make a request malformed.
		return false
	case "te":
		if value != "trailers" {
			return false
		}
		st.teTrailers = true
		return true
	case "content-length":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 || (st.declared >= 0 && st.declared != n) {
			return false
		}
		st.declared = n
		return true
	case "host":
		st.host = value
		return true
	case "expect":
		st.expect100 = http1.HasToken([]byte(value), "100-continue")
		return true
	case "http2-settings":
		return true
	case "cookie":
		st.cookies++
	}
	st.fields = append(st.fields, field{name, value})
	return true
}

// validName reports whether a field name is a lower-case token.
func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		if !h2NameChars[name[i]] {
			return false
		}
	}
	return true
}

// obsTextAllowed reports whether a field value passes disallow_obs_text:
// with it, a byte of 0x80 to 0xFF (RFC 9110 §5.5 obs-text) makes the
// request malformed, as oghttp2's header validator does.
func (st *h2Stream) obsTextAllowed(v string) bool {
	if !st.h.m.cfg.h2.disallowObsText {
		return true
	}
	for i := 0; i < len(v); i++ {
		if v[i] >= 0x80 {
			return false
		}
	}
	return true
}

// validValue reports whether a field value is free of NUL, CR and LF,
// which could otherwise smuggle a field into an HTTP/1 upstream request.
// Eight bytes at a time are first looked at for any byte below 0x0e (CR,
// the largest of the three, is 0x0d): a usual value has none, and its
// bytes are then not looked at one by one (a quarter of the instructions
// on a request's values).
func validValue(v string) bool {
	i := 0
	if len(v) >= 8 {
		for ; i+8 <= len(v); i += 8 {
			if hasByteBelow0E(load64(v, i)) {
				return validBytes(v[i:])
			}
		}
		// The last, partial word: the last eight bytes, which overlap
		// ones already looked at.
		return !hasByteBelow0E(load64(v, len(v)-8)) || validBytes(v[len(v)-8:])
	}
	return validBytes(v)
}

// validBytes is validValue one byte at a time.
func validBytes(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case 0, '\r', '\n':
			return false
		}
	}
	return true
}

// load64 returns the eight bytes of s at i as a little-endian word (one
// load once compiled).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hasByteBelow0E reports whether a byte of w is below 0x0e (the classic
// "has a byte less than n" test, exact for n up to 128: a byte below n
// borrows into its high bit, which a byte of 0x80 or more already had).
func hasByteBelow0E(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (w-ones*0x0e)&^w&highs != 0
}

// h2NameChars are the characters of an HTTP/2 field name: token
// characters without upper-case letters.
var h2NameChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validRequest checks the pseudo-header fields of a complete request.
func (st *h2Stream) validRequest() bool {
	if st.method == "" {
		return false
	}
	switch {
	case st.protocol != "":
		// An extended CONNECT has all four pseudo-headers (RFC 8441 §4)
		// and no end of stream: its DATA frames carry the tunnel.
		return st.method == "CONNECT" && st.scheme != "" && st.path != "" && st.path[0] == '/' && st.authority != ""
	case st.method == "CONNECT":
		return st.path == "" && st.scheme == "" && st.authority != ""
	}
	if st.scheme == "" || st.path == "" {
		return false
	}
	if st.path[0] != '/' && (st.path != "*" || st.method != "OPTIONS") {
		return false
	}
	return !(st.endStream && st.declared > 0)
}

// run serves the request in the stream's own goroutine.
func (st *h2Stream) run() {
	h := st.h
	s := &st.s
	s.begin(st.t0, protoHTTP2)
	s.scheme = st.scheme
	authority := st.authority
	if authority == "" {
		authority = st.host
	}
	s.keepAlive, s.teTrailers, s.expect100 = true, st.teTrailers, st.expect100
	// The fields' names are not noted: the tracing's start looks at all.
	s.copied = copiedFields{names: ^nameMask(0)}
	st.copyFields()
	tunnel := st.detectUpgrade()
	if tunnel {
		// An extended CONNECT is served as the HTTP/1.1 Upgrade it
		// stands for, as Envoy does: a GET with Connection: upgrade
		// and Upgrade: <protocol>.
		s.setRequest("GET", st.path, authority)
	} else {
		s.setRequest(st.method, st.path, authority)
	}
	switch {
	case tunnel || s.upg.connect:
		// The DATA frames are the tunnel's payload, read once it opens;
		// the request itself has no body.
		s.requestEnded()
	case st.endStream:
		s.requestEnded()
		if st.declared == 0 {
			s.reqLength = 0
		}
	default:
		s.body = st
		s.reqLength = st.declared
		s.reqChunked = st.declared < 0
	}
	switch {
	case s.peerReset.Load():
		// The client reset the stream in the input that opened it:
		// it is accounted for and goes no further.
		s.flags |= accesslog.DownstreamRemoteReset
		s.details = "downstream_remote_reset"
	case st.tooLarge:
		h.m.stats.cxProtocolError.Inc()
		h.stats.headerOverflow.Inc()
		s.localReply(431, http1.StatusText(431), accesslog.DownstreamProtocolError, "http2.too_many_headers")
	default:
		if st.lastAllowed {
			s.closeConn = true
			h.m.stats.cxMaxRequests.Inc()
		}
		if s.prepareRequest() {
			s.decode()
		}
	}
	s.end()
	st.done()
}

// copyFields fills the stream's request headers. The cookie fields an
// HTTP/2 client may split are joined again with "; " (RFC 9113 §8.2.3),
// as an HTTP/1 upstream expects one.
func (st *h2Stream) copyFields() {
	s := &st.s
	if st.cookies > 1 {
		st.cookieBuf = st.cookieBuf[:0]
		for _, f := range st.fields {
			if f.name == "cookie" {
				if len(st.cookieBuf) > 0 {
					st.cookieBuf = append(st.cookieBuf, "; "...)
				}
				st.cookieBuf = append(st.cookieBuf, f.value...)
			}
		}
	}
	joined := false
	for _, f := range st.fields {
		if f.name == "cookie" && st.cookies > 1 {
			if joined {
				continue
			}
			f.value, joined = view(st.cookieBuf), true
		}
		s.reqHeaders.Add(f.name, f.value)
	}
}

// done closes the stream once its goroutine is finished: a response that
// never ended is reset, a request body still arriving is refused with
// RST_STREAM NO_ERROR (RFC 9113 §8.1), and the stream is recycled.
func (st *h2Stream) done() {
	h := st.h
	h.mu.Lock()
	switch {
	case !st.localDone:
		h.appendResetLocked(st.id, errCodeInternal)
	case !st.remoteDone:
		h.appendResetLocked(st.id, errCodeNo)
	}
	st.localDone, st.remoteDone = true, true
	h.forgetLocked(st)
	h.mu.Unlock()
	if !st.s.leaked {
		st.trailer = nil
		h.m.h2streams.Put(st)
	}
	h.wg.Done()
}

// errStreamReset is returned by the writes and reads of a stream that was
// reset.
var errStreamReset = errors.New("http/2 stream reset")

// writableLocked reports why the stream cannot send, if it cannot.
func (st *h2Stream) writableLocked() error {
	h := st.h
	switch {
	case h.werr != nil:
		return h.werr
	case h.closed, h.fail != nil:
		return errConnClosed
	case st.reset:
		return errStreamReset
	case st.localDone:
		return errStreamReset
	}
	return nil
}

// writeHead implements downstream: the response head as a HEADERS frame
// (and CONTINUATIONs when it is larger than a frame).
func (st *h2Stream) writeHead(s *stream, n int64, hasBody bool) error {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := st.writableLocked(); err != nil {
		return err
	}
	// Encoded under h.mu, with the connection's memo of the fields sent
	// lately (see hpackMemo).
	if h.memo == nil {
		h.memo = &hpackMemo{huff: !h.m.cfg.h2.noHuffman}
	}
	b := appendHPACKStatus(st.hblock[:0], s.status, h.memo.huff)
	// The memo lowers the names and drops the connection-specific
	// fields.
	fields := s.respHeaders.fields
	for i := range fields {
		b = h.memo.appendField(b, i, fields[i].name, fields[i].value)
	}
	if n >= 0 {
		var num [20]byte
		b = h.memo.appendField(b, len(fields), "content-length", view(strconv.AppendInt(num[:0], n, 10)))
	}
	st.hblock = b
	st.lastData = -1
	st.responded = true
	st.appendHeadersLocked(b, !hasBody)
	if s.closeConn {
		// The HTTP/2 form of Connection: close: the connection drains.
		h.startDrainLocked()
	}
	return nil
}

// lowerInto returns name in lower case: name itself when it has no
// upper-case letter (an HTTP/2 upstream's, or a field the proxy added),
// else a lowered copy in *buf (an HTTP/1 upstream's), valid until *buf is
// used again.
func lowerInto(buf *[]byte, name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			*buf = append((*buf)[:0], name...)
			b := *buf
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return view(b)
		}
	}
	return name
}

// connectionSpecific reports whether HTTP/2 forbids a response field
// (RFC 9113 §8.2.2).
func connectionSpecific(name string) bool {
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// appendHeadersLocked queues a header block as HEADERS and CONTINUATION
// frames.
func (st *h2Stream) appendHeadersLocked(block []byte, endStream bool) {
	h := st.h
	var flags uint8
	if endStream {
		flags = flagEndStream
		st.localDone = true
	}
	typ := frameHeaders
	for {
		n := min(len(block), int(h.peerMaxFrame))
		f := flags
		if n == len(block) {
			f |= flagEndHeaders
		}
		h.wbuf = appendFrameHeader(h.wbuf, n, typ, f, st.id)
		h.wbuf = append(h.wbuf, block[:n]...)
		h.countFrameLocked(false)
		block = block[n:]
		if len(block) == 0 {
			break
		}
		typ, flags = frameContinuation, 0
	}
	if endStream {
		h.kickLocked()
	}
}

// writeBody implements downstream.
func (st *h2Stream) writeBody(p []byte) error { return writeData(st, p) }

// writeBodyString implements downstream.
func (st *h2Stream) writeBodyString(p string) error { return writeData(st, p) }

// writeData queues p as DATA frames as the flow-control windows allow,
// waiting for WINDOW_UPDATEs (under the stream idle timeout) when they are
// exhausted.
func writeData[T string | []byte](st *h2Stream, p T) error {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(p) > 0 {
		if err := st.writableLocked(); err != nil {
			return err
		}
		if len(h.wbuf) >= h.highWater {
			if err := st.waitBufferLocked(); err != nil {
				return err
			}
			continue
		}
		n := min(int64(len(p)), int64(h.peerMaxFrame), st.sendWindow, h.sendWindow)
		if n <= 0 {
			if err := st.waitWindowLocked(); err != nil {
				return err
			}
			continue
		}
		st.lastData, st.lastGen = len(h.wbuf), h.wgen
		h.wbuf = appendFrameHeader(h.wbuf, int(n), frameData, 0, st.id)
		h.wbuf = append(h.wbuf, p[:n]...)
		h.guard.dataSent.Add(1)
		h.countFrameLocked(false)
		st.sendWindow -= n
		h.sendWindow -= n
		p = p[n:]
	}
	if len(h.wbuf) >= outBufSize {
		h.kickLocked()
	}
	return nil
}

// waitWindowLocked waits for the client to open a window, under the
// stream idle timeout.
func (st *h2Stream) waitWindowLocked() error {
	st.waitingWindow = true
	defer func() { st.waitingWindow = false }()
	st.h.kickLocked()
	return st.waitWriteLocked()
}

// waitBufferLocked waits for the writer to take the connection's queued
// output, which reached the per-connection buffer limit, under the stream
// idle timeout: a client that does not read holds its streams back rather
// than making the proxy buffer without end.
func (st *h2Stream) waitBufferLocked() error {
	h := st.h
	h.bufWaiters++
	defer func() { h.bufWaiters-- }()
	h.kickLocked()
	return st.waitWriteLocked()
}

// waitWriteLocked waits for the client to take more of the response,
// under the stream idle timeout while the response is still coming, or,
// once all of it has been produced, under the flush timeout (counted as
// tx_flush_timeout when it passes, as Envoy's codec does), and under the
// stream's maximum durations, which the stream answers for when the write
// fails.
func (st *h2Stream) waitWriteLocked() error {
	limit := st.s.idleTimeout()
	if st.s.produced {
		limit = st.s.flushTimeout()
	}
	timer := after(time.Now(), limit)
	d := earliest(timer, st.s.writeLimit())
	if !st.waitLocked(d) {
		return nil
	}
	if d.Equal(timer) {
		st.s.writeTimedOut = writeIdleTimeout
		if st.s.produced {
			st.h.stats.txFlushTimeout.Inc()
			st.s.writeTimedOut = writeFlushTimeout
		}
	}
	return os.ErrDeadlineExceeded
}

// waitLocked waits on cond until woken or until d passes (the zero time:
// no limit). It reports whether d has passed.
func (st *h2Stream) waitLocked(d time.Time) bool {
	if d.IsZero() {
		st.cond.Wait()
		return false
	}
	wait := time.Until(d)
	if wait <= 0 {
		return true
	}
	t := time.AfterFunc(wait, st.wake)
	st.cond.Wait()
	t.Stop()
	return !time.Now().Before(d)
}

// finish implements downstream: the stream ends with trailers, with
// END_STREAM set on the last DATA frame if it is still queued, or with an
// empty DATA frame.
func (st *h2Stream) finish() error {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.localDone && !st.reset {
		// The head ended the stream (no body).
		return nil
	}
	if err := st.writableLocked(); err != nil {
		return err
	}
	switch {
	case len(st.trailer) > 0:
		st.appendHeadersLocked(st.trailerBlock(), true)
		return nil
	case st.lastData >= 0 && st.lastGen == h.wgen:
		h.wbuf[st.lastData+4] |= flagEndStream
	default:
		h.wbuf = appendFrameHeader(h.wbuf, 0, frameData, flagEndStream, st.id)
		h.guard.dataSent.Add(1)
		h.countFrameLocked(false)
	}
	st.localDone = true
	h.kickLocked()
	return nil
}

// trailerBlock encodes the response trailers.
func (st *h2Stream) trailerBlock() []byte {
	b := st.hblock[:0]
	for k, vs := range st.trailer {
		name := lowerInto(&st.nameBuf, k)
		if connectionSpecific(name) {
			continue
		}
		for _, v := range vs {
			b = appendHPACKField(b, name, v, !st.h.m.cfg.h2.noHuffman)
		}
	}
	st.hblock = b
	return b
}

// abort implements downstream: the stream is reset, so the client sees
// the response break off; the connection carries on.
func (st *h2Stream) abort() {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !st.localDone {
		h.appendResetLocked(st.id, errCodeInternal)
		st.localDone = true
	}
}

// gone implements downstream: the stream was reset, or its connection
// ended.
func (st *h2Stream) gone() bool {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return st.reset || h.closed || h.werr != nil
}

// flush implements downstream: what is queued goes out.
func (st *h2Stream) flush() error {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kickLocked()
	return st.writableLocked()
}

// continue100 implements downstream: an interim 100 head.
func (st *h2Stream) continue100() error {
	h := st.h
	b := appendHPACKStatus(st.hblock[:0], 100, !st.h.m.cfg.h2.noHuffman)
	st.hblock = b
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := st.writableLocked(); err != nil {
		return err
	}
	st.appendHeadersLocked(b, false)
	h.kickLocked()
	h.m.stats.recordInterim()
	return nil
}

// awaitBody implements downstream: it waits as Next does, without taking
// what came.
func (st *h2Stream) awaitBody() error {
	h := st.h
	cfg := &h.m.cfg
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(st.in) == 0 && !st.awaitCancelled {
		if st.bodyErr != nil || st.reset || st.remoteDone || h.closed || h.werr != nil {
			// Next reports it.
			return nil
		}
		d := earliest(earliest(after(st.lastActivity, st.s.idleTimeout()), after(st.t0, cfg.requestTimeout)), st.s.durationLimit())
		if st.waitLocked(d) {
			return os.ErrDeadlineExceeded
		}
	}
	return nil
}

// cancelAwait implements downstream.
func (st *h2Stream) cancelAwait() {
	h := st.h
	h.mu.Lock()
	st.awaitCancelled = true
	st.cond.Broadcast()
	h.mu.Unlock()
}

// abandonBody implements downstream: the stream's body reads fail from
// now on (the stream then ends with RST_STREAM NO_ERROR, see done).
func (st *h2Stream) abandonBody() {
	h := st.h
	h.mu.Lock()
	if st.bodyErr == nil {
		st.bodyErr = errBodyAbandoned
	}
	st.cond.Broadcast()
	h.mu.Unlock()
}

// errBodyAbandoned is what the body's reads return after abandonBody.
var errBodyAbandoned = errors.New("request body abandoned")

// endAwait implements downstream.
func (st *h2Stream) endAwait() {
	h := st.h
	h.mu.Lock()
	st.awaitCancelled = false
	h.mu.Unlock()
}

// trailers implements downstream: they are sent by finish.
func (st *h2Stream) trailers(t http.Header) { st.trailer = t }

// touch implements downstream: the stream idle timeout restarts.
func (st *h2Stream) touch(now time.Time) { st.lastActivity = now }

// Ready reports whether Next returns without waiting for the client: a
// piece has arrived, or the body has ended or failed.
func (st *h2Stream) Ready() bool {
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(st.in) > 0 || st.bodyErr != nil || st.reset || st.remoteDone || h.closed || h.werr != nil
}

// Next implements bodySource: the request body as the client sends it,
// under the stream idle and request timeouts. Flow-control credit goes
// back as the body is read.
func (st *h2Stream) Next() ([]byte, error) {
	h := st.h
	cfg := &h.m.cfg
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(st.in) == 0 {
		switch {
		case st.bodyErr != nil:
			return nil, st.bodyErr
		case st.reset:
			return nil, errStreamReset
		case st.remoteDone:
			return nil, io.EOF
		case h.closed || h.werr != nil:
			return nil, errConnClosed
		}
		d := earliest(earliest(after(st.lastActivity, st.s.idleTimeout()), after(st.t0, cfg.requestTimeout)), st.s.durationLimit())
		if st.waitLocked(d) {
			return nil, os.ErrDeadlineExceeded
		}
	}
	st.in, st.out = st.out[:0], st.in
	st.lastActivity = time.Now()
	h.creditLocked(st, int64(len(st.out)))
	return st.out, nil
}
