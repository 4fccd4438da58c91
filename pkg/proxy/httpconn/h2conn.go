package httpconn

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/hpack"
)

// h2Conn is a downstream HTTP/2 connection. The connection's goroutine
// (HandleConn's) reads and dispatches frames; each request runs in a
// goroutine of its own through the same filters and router as HTTP/1; a
// writer goroutine sends what the others queue.
//
// Output is gathered in one buffer under mu and written by the writer,
// which yields once before each write: responses that complete together
// (the usual case under load, when one poll wakes many upstream reads)
// leave in one system call instead of one each.
type h2Conn struct {
	c *serverConn
	m *Manager

	// Read-side state, owned by the connection's goroutine.
	dec        *hpack.Decoder
	payload    []byte // frame payloads too large to read in place
	decoding   *h2Stream
	decodeErr  h2ErrCode // a stream error found while decoding a block
	selfDep    bool      // the block's stream depends on itself
	contStream uint32    // the stream whose CONTINUATION frames are due
	contEnd    bool      // that block's HEADERS carried END_STREAM
	lastID     uint32    // the highest stream identifier the client used
	served     uint32    // streams accepted so far
	sawPreface bool      // the client's SETTINGS arrived
	rd         deadline
	// blockBytes is the size of the header block being received, checked
	// as its frames arrive.
	blockBytes int
	// trailer collects the request trailers being decoded (trailing is
	// set while a trailer block is), trailerBytes their decoded size,
	// trailerBad a field no trailer may carry (see addTrailer).
	trailing     bool
	trailer      http.Header
	trailerBytes int
	trailerBad   bool
	// pending are the streams whose request head arrived in the input
	// being read: they start once it is all handled, so that a reset
	// that came with them stops them before they reach an upstream.
	pending []*h2Stream
	// resetsSeen: the client reset a stream early (see moreInput).
	resetsSeen bool
	// framesSinceYield counts the frames read since the read loop last
	// let other goroutines run.
	framesSinceYield int
	// recvUnacked is connection-level flow-control credit not yet given
	// back to the client.
	recvUnacked int64

	// workers run the streams.
	workers h2Workers
	// reqMemo remembers the last repeated request header block.
	reqMemo h2BlockMemo

	// writer state: kick wakes the writer; done is closed when it exits.
	kick chan struct{}
	done chan struct{}
	wd   deadline

	// stats are the HTTP/2 codec stats; guard counts what the flood
	// limits bound (its write side under mu).
	stats *h2Stats
	guard h2Guard
	// highWater bounds the output queued for the client: a stream that
	// would queue more waits for the writer (the listener's
	// per-connection buffer limit).
	highWater int

	// mu guards everything below, and the output of every stream.
	mu sync.Mutex
	// memo remembers the encoding of the response fields sent lately
	// (made on the first response head).
	memo    *hpackMemo
	wbuf    []byte
	spare   []byte
	wgen    uint64 // counts the buffers handed to the writer
	werr    error  // the first write error; every later write fails with it
	closed  bool   // the connection is ending: queued writes are dropped
	streams h2StreamTable
	// goingAway: a GOAWAY was sent; streams above goAwayID are refused.
	goingAway bool
	goAwayID  uint32
	// draining: the drain sequence's first GOAWAY went out; drainTimer
	// sends the final one.
	draining   bool
	drainTimer *time.Timer
	// The client's settings and the connection's send window.
	peerWindow   int32  // SETTINGS_INITIAL_WINDOW_SIZE
	peerMaxFrame uint32 // SETTINGS_MAX_FRAME_SIZE
	sendWindow   int64
	// idleSince is when the last stream ended (idle timeout).
	idleSince time.Time
	// rdStale: another goroutine set the read deadline, to rdArmed, so
	// the read loop's record of it (rd) is out of date.
	rdStale bool
	rdArmed time.Time
	// resetIDs are the streams the server reset lately: frames the
	// client sent before it saw the reset are ignored (RFC 9113 §5.1).
	resetIDs  [64]uint32
	resetNext int
	// fail ends the connection at the read loop's next look: a flood or
	// another abuse found away from the read loop.
	fail error
	// ka is the connection_keepalive state.
	ka h2Keepalive
	// resets is the RST_STREAM rate limit's bucket (h2resetrate.go).
	resets resetBucket
	// ending: finish runs; streams it drops are not the client's doing.
	ending bool
	// closedStreams and prematureResets count the streams that ended,
	// and those among them the client reset before a response and
	// within the premature-reset lifetime.
	closedStreams, prematureResets uint64
	// bufWaiters counts the streams waiting for the output to drain
	// below highWater; inflightBytes is the size of the write under way.
	bufWaiters    int
	inflightBytes int

	wg sync.WaitGroup // the stream goroutines
}

// errConnClosed is what writes return once the connection ends.
var errConnClosed = errors.New("http/2 connection closed")

// serveHTTP2 runs the connection as HTTP/2 until it ends.
func (c *serverConn) serveHTTP2() {
	st := c.m.stats
	st.cxHTTP2Total.Inc()
	st.cxHTTP2Active.Inc()
	defer st.cxHTTP2Active.Dec()
	h := &h2Conn{
		c:            c,
		m:            c.m,
		kick:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		peerWindow:   h2DefaultWindow,
		peerMaxFrame: h2DefaultMaxFrame,
		sendWindow:   h2DefaultWindow,
		// The idle timeout counts from the accept.
		idleSince: c.lastNow,
		stats:     c.m.h2CodecStats(),
		highWater: connBufferLimit(c.nc),
	}
	h.guard = h2Guard{lim: &c.m.cfg.h2, stats: h.stats}
	h.resets = resetBucket{tokens: c.m.cfg.h2.resetBurst, base: time.Now()}
	h.workers.init()
	// The table starts at HPACK's 4096 bytes; until the client
	// acknowledges the SETTINGS_HEADER_TABLE_SIZE announced it may still
	// size it up to that, so the larger of the two bounds its updates
	// (onSettings narrows it at the acknowledgement).
	h.dec = hpack.NewDecoder(defaultHPACKTableSize, h.emit)
	h.dec.SetAllowedMaxDynamicTableSize(max(c.m.cfg.h2.hpackTableSize, defaultHPACKTableSize))
	h.dec.SetMaxStringLength(c.m.cfg.maxRequestHeadersBytes)
	h.dec.SetMaxWireStringLength(c.m.cfg.h2.maxFieldWireBytes)
	c.setH2(h)
	c.startParking()
	go h.writeLoop()
	h.startKeepalive()
	err := h.readLoop()
	h.stopKeepalive()
	h.finish(err)
}

// readLoop checks the preface, then reads and handles frames until the
// connection ends. It returns why.
func (h *h2Conn) readLoop() error {
	cfg := &h.m.cfg
	h.mu.Lock()
	// custom_settings_parameters first, then the named settings, as
	// Envoy sends them.
	settings := append(make([]uint32, 0, len(cfg.h2.customSettings)+10), cfg.h2.customSettings...)
	if cfg.h2.hpackTableSize != defaultHPACKTableSize || hasCustomSetting(cfg.h2.customSettings, settingHeaderTableSize) {
		settings = append(settings, settingHeaderTableSize, cfg.h2.hpackTableSize)
	}
	settings = append(settings,
		settingMaxConcurrentStreams, cfg.h2.maxStreams,
		settingInitialWindowSize, cfg.h2.streamWindow,
		settingMaxHeaderListSize, uint32(cfg.maxRequestHeadersBytes),
	)
	if cfg.h2.allowConnect {
		settings = append(settings, settingEnableConnectProtocol, 1)
	}
	h.wbuf = appendSettings(h.wbuf, settings...)
	h.countFrameLocked(true)
	if extra := int64(cfg.h2.connWindow) - h2DefaultWindow; extra > 0 {
		h.wbuf = appendWindowUpdate(h.wbuf, 0, uint32(extra))
		h.countFrameLocked(false)
	}
	h.kickLocked()
	h.mu.Unlock()
	if h.c.closingNow() {
		// The manager closed while the connection was being sniffed.
		h.goAway(errCodeNo)
		return nil
	}

	br := h.c.br
	if d := after(h.idleSince, h.m.idleTimeout()); h.rd.need(d, true) {
		_ = h.c.nc.SetReadDeadline(d)
	}
	pre, err := br.Peek(len(h2Preface))
	if err != nil {
		if isTimeout(err) {
			// A client that never sent its preface idled out.
			h.m.stats.cxIdleTimeout.Inc()
			return errIdle
		}
		return err
	}
	if string(pre) != h2Preface {
		return connError(errCodeProtocol, "bad connection preface")
	}
	_, _ = br.Discard(len(h2Preface))
	for {
		if finished, err := h.awaitFrame(); finished || err != nil {
			return err
		}
		if !h.frameBuffered() {
			if len(h.pending) > 0 && !h.moreInput() {
				// Everything the client sent so far is handled:
				// the requests it opened start now.
				h.dispatch()
			}
			if h.framesSinceYield >= h2YieldEvery {
				// The next frame needs a read, and a client that
				// keeps the socket full never makes a read wait:
				// let the other connections' goroutines have their
				// turn, as an event loop serves its connections
				// one read each.
				h.framesSinceYield = 0
				runtime.Gosched()
			}
		}
		h.framesSinceYield++
		var err error
		if (br == nil || br.Buffered() == 0) && len(h.pending) == 0 && h.c.park.raw != nil {
			// Nothing left to handle: the connection waits for the
			// next frame parked, without its read buffer (see
			// park.go).
			h.c.park.hold = false
			err = h.c.awaitByte()
			br = h.c.br
		}
		var hdr []byte
		if err == nil {
			hdr, err = br.Peek(h2FrameHeaderLen)
		}
		if err != nil {
			if !isTimeout(err) {
				return err
			}
			if h.timedOut() {
				// Idle: the connection drains (at once when
				// drain_timeout is 0), and ends when that is done.
				h.mu.Lock()
				h.startDrainLocked()
				h.mu.Unlock()
			}
			continue
		}
		fh := parseFrameHeader(hdr)
		_, _ = br.Discard(h2FrameHeaderLen)
		if fh.length > h2DefaultMaxFrame {
			return connError(errCodeFrameSize, "frame larger than SETTINGS_MAX_FRAME_SIZE")
		}
		p, err := h.readPayload(int(fh.length))
		if err != nil {
			return err
		}
		if err := h.guard.inbound(fh, payloadLen(fh, p)); err != nil {
			return err
		}
		if err := h.handleFrame(fh, p); err != nil {
			return err
		}
		if len(p) > 0 && int(fh.length) <= br.Size() {
			_, _ = br.Discard(int(fh.length))
		}
	}
}

// h2YieldEvery is how many frames a connection's read loop handles before
// it yields, when its client sends without pause: a few dozen requests'
// worth, so that an ordinary connection seldom yields and a flooding one
// does every few tens of microseconds.
const h2YieldEvery = 256

// errIdle ends a connection that had no stream for the idle timeout.
var errIdle = errors.New("idle timeout")

// payloadLen is the size of a frame's payload without its padding, as the
// empty-frame limit counts it (a malformed padding counts as empty: the
// frame is refused anyway).
func payloadLen(fh h2FrameHeader, p []byte) int {
	if fh.flags&flagPadded == 0 || (fh.typ != frameData && fh.typ != frameHeaders) {
		return len(p)
	}
	if len(p) == 0 {
		return 0
	}
	return max(len(p)-1-int(p[0]), 0)
}

// frameBuffered reports whether the read buffer holds a whole frame, which
// the read loop can handle without waiting for the client.
func (h *h2Conn) frameBuffered() bool {
	br := h.c.br
	if br == nil {
		// Parked: nothing is buffered.
		return false
	}
	n := br.Buffered()
	if n < h2FrameHeaderLen {
		return false
	}
	hdr, _ := br.Peek(h2FrameHeaderLen)
	return n-h2FrameHeaderLen >= int(parseFrameHeader(hdr).length)
}

// moreInput reports whether the client has sent bytes the read loop has
// not read yet. It is asked only of a connection whose client reset
// streams early (the rapid-reset pattern): its new streams wait until
// every byte it sent is handled, so that a reset split from its request
// by the network still comes first.
func (h *h2Conn) moreInput() bool {
	return h.resetsSeen && inputPending(h.c.nc)
}

// dispatch starts the pending streams, each in a goroutine of its own
// (a reused one: see h2Workers).
// A stream the client reset meanwhile only accounts for itself (see
// h2Stream.run): it reaches no upstream.
func (h *h2Conn) dispatch() {
	for i, st := range h.pending {
		h.pending[i] = nil
		h.wg.Add(1)
		if st.s.peerReset.Load() {
			// Reset in the same burst: accounted for here, without a
			// goroutine, as a rapid reset costs nothing more.
			st.run()
			continue
		}
		h.workers.start(st)
	}
	h.pending = h.pending[:0]
}

// readPayload returns a frame's payload: in place in the read buffer when
// it fits (the caller discards it after handling), else copied.
func (h *h2Conn) readPayload(n int) ([]byte, error) {
	br := h.c.br
	if n == 0 {
		return nil, nil
	}
	if n <= br.Size() {
		return br.Peek(n)
	}
	if cap(h.payload) < n {
		h.payload = make([]byte, h2DefaultMaxFrame)
	}
	p := h.payload[:n]
	_, err := io.ReadFull(br, p)
	return p, err
}

// awaitFrame prepares the wait for the next frame, with one look at the
// connection's state: finished is true once a graceful close is complete
// (GOAWAY sent and no stream left); otherwise the read deadline is set to
// the idle timeout while no stream is open, and to none while one is
// (streams time out on their own).
func (h *h2Conn) awaitFrame() (finished bool, err error) {
	h.mu.Lock()
	open, since, goingAway, draining, fail := h.streams.len(), h.idleSince, h.goingAway, h.draining, h.fail
	if h.rdStale {
		h.rd = deadline{at: h.rdArmed, set: true}
		h.rdStale = false
	}
	h.mu.Unlock()
	if fail != nil {
		return false, fail
	}
	if goingAway && open == 0 {
		return true, nil
	}
	var d time.Time
	if open == 0 && !draining {
		// While draining, the final GOAWAY ends an idle connection.
		d = after(since, h.m.idleTimeout())
	}
	// Exact: the deadline changes only when the connection goes idle or
	// busy, not per frame.
	if h.rd.need(d, true) {
		return false, h.c.nc.SetReadDeadline(d)
	}
	return false, nil
}

// timedOut reports whether a read deadline that fired means the idle
// timeout passed (it may also have been a wake-up, or the timeout shortened
// by reduce_timeouts).
func (h *h2Conn) timedOut() bool {
	h.rd.forget()
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.m.idleTimeout()
	if h.streams.len() > 0 || t <= 0 || h.draining || h.goingAway {
		return false
	}
	if time.Since(h.idleSince) >= t {
		h.m.stats.cxIdleTimeout.Inc()
		return true
	}
	return false
}

// handleFrame handles one frame; an error ends the connection.
func (h *h2Conn) handleFrame(fh h2FrameHeader, p []byte) error {
	if h.contStream != 0 && (fh.typ != frameContinuation || fh.streamID != h.contStream) {
		return connError(errCodeProtocol, "expected CONTINUATION")
	}
	if !h.sawPreface && fh.typ != frameSettings {
		return connError(errCodeProtocol, "first frame is not SETTINGS")
	}
	if h.ka.timer != nil && (fh.typ != framePing || fh.flags&flagAck == 0) {
		h.keepaliveSeen(false, nil)
	}
	switch fh.typ {
	case frameData:
		return h.onData(fh, p)
	case frameHeaders:
		return h.onHeaders(fh, p)
	case frameContinuation:
		if h.contStream == 0 {
			return connError(errCodeProtocol, "unexpected CONTINUATION")
		}
		return h.onHeaderBlock(fh.streamID, p, fh.flags&flagEndHeaders != 0, h.contEnd)
	case framePriority:
		if fh.streamID == 0 {
			return connError(errCodeProtocol, "PRIORITY on stream 0")
		}
		switch {
		case len(p) != 5:
			h.resetStream(fh.streamID, errCodeFrameSize)
		case uint31(p) == fh.streamID:
			h.resetStream(fh.streamID, errCodeProtocol)
		}
		return nil
	case frameRSTStream:
		return h.onRSTStream(fh, p)
	case frameSettings:
		return h.onSettings(fh, p)
	case framePushPromise:
		return connError(errCodeProtocol, "PUSH_PROMISE from a client")
	case framePing:
		if fh.streamID != 0 {
			return connError(errCodeProtocol, "PING on a stream")
		}
		if len(p) != 8 {
			return connError(errCodeFrameSize, "PING of a bad length")
		}
		if fh.flags&flagAck != 0 {
			h.keepaliveSeen(true, p)
			return nil
		}
		h.mu.Lock()
		h.wbuf = appendFrameHeader(h.wbuf, 8, framePing, flagAck, 0)
		h.wbuf = append(h.wbuf, p...)
		h.countFrameLocked(true)
		h.kickLocked()
		h.mu.Unlock()
		return nil
	case frameGoAway:
		if fh.streamID != 0 {
			return connError(errCodeProtocol, "GOAWAY on a stream")
		}
		// The client will open no more streams: finish those open.
		h.goAway(errCodeNo)
		return nil
	case frameWindowUpdate:
		return h.onWindowUpdate(fh, p)
	}
	// Unknown frame types are ignored (§4.1).
	return nil
}

// onSettings applies the client's settings and acknowledges them.
func (h *h2Conn) onSettings(fh h2FrameHeader, p []byte) error {
	if fh.streamID != 0 {
		return connError(errCodeProtocol, "SETTINGS on a stream")
	}
	if fh.flags&flagAck != 0 {
		if len(p) != 0 {
			return connError(errCodeFrameSize, "SETTINGS ack with a payload")
		}
		// The server sends one SETTINGS frame: from its
		// acknowledgement on, the client's table size updates are
		// bound by the SETTINGS_HEADER_TABLE_SIZE announced.
		h.dec.SetAllowedMaxDynamicTableSize(h.m.cfg.h2.hpackTableSize)
		return nil
	}
	if len(p)%6 != 0 {
		return connError(errCodeFrameSize, "SETTINGS of a bad length")
	}
	h.sawPreface = true
	h.mu.Lock()
	defer h.mu.Unlock()
	for ; len(p) > 0; p = p[6:] {
		id := uint16(p[0])<<8 | uint16(p[1])
		v := binary.BigEndian.Uint32(p[2:6])
		switch id {
		case settingEnablePush:
			if v > 1 {
				return connError(errCodeProtocol, "SETTINGS_ENABLE_PUSH must be 0 or 1")
			}
		case settingInitialWindowSize:
			if v > h2MaxWindow {
				return connError(errCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1")
			}
			// Every open stream's window moves by the difference
			// (§6.9.2), and may go negative.
			delta := int64(v) - int64(h.peerWindow)
			h.peerWindow = int32(v)
			for st := range h.streams.all() {
				st.sendWindow += delta
				if st.sendWindow > h2MaxWindow {
					return connError(errCodeFlowControl, "a stream window overflowed")
				}
				st.cond.Broadcast()
			}
		case settingMaxFrameSize:
			if v < h2DefaultMaxFrame || v > h2MaxFrameLimit {
				return connError(errCodeProtocol, "SETTINGS_MAX_FRAME_SIZE out of range")
			}
			h.peerMaxFrame = v
		}
		// SETTINGS_HEADER_TABLE_SIZE needs nothing: the encoder never
		// indexes. Unknown settings are ignored (§6.5.2).
	}
	h.wbuf = appendFrameHeader(h.wbuf, 0, frameSettings, flagAck, 0)
	h.countFrameLocked(true)
	h.kickLocked()
	return nil
}

// onWindowUpdate grows a send window.
func (h *h2Conn) onWindowUpdate(fh h2FrameHeader, p []byte) error {
	if len(p) != 4 {
		return connError(errCodeFrameSize, "WINDOW_UPDATE of a bad length")
	}
	inc := int64(uint31(p))
	if inc == 0 {
		// A stream error by the RFC, but the client is broken either
		// way, and the stream may be gone already.
		return connError(errCodeProtocol, "WINDOW_UPDATE of 0")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if fh.streamID == 0 {
		h.sendWindow += inc
		if h.sendWindow > h2MaxWindow {
			return connError(errCodeFlowControl, "connection window overflowed")
		}
		for st := range h.streams.all() {
			if st.waitingWindow {
				st.cond.Broadcast()
			}
		}
		return nil
	}
	if fh.streamID > h.lastID {
		return connError(errCodeProtocol, "WINDOW_UPDATE on an idle stream")
	}
	st := h.streams.get(fh.streamID)
	if st == nil {
		return nil
	}
	st.sendWindow += inc
	if st.sendWindow > h2MaxWindow {
		h.resetStreamLocked(st, errCodeFlowControl)
		return nil
	}
	st.cond.Broadcast()
	return nil
}

// onRSTStream ends a stream at the client's request.
func (h *h2Conn) onRSTStream(fh h2FrameHeader, p []byte) error {
	if fh.streamID == 0 {
		return connError(errCodeProtocol, "RST_STREAM on stream 0")
	}
	if len(p) != 4 {
		return connError(errCodeFrameSize, "RST_STREAM of a bad length")
	}
	if fh.streamID > h.lastID {
		return connError(errCodeProtocol, "RST_STREAM on an idle stream")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The client has closed the stream too: any frame it sends on it
	// from now on is an error, not one that crossed a reset.
	for i, r := range h.resetIDs {
		if r == fh.streamID {
			h.resetIDs[i] = 0
		}
	}
	h.stats.rxReset.Inc()
	h.countResetLocked()
	if st := h.streams.get(fh.streamID); st != nil {
		h.m.stats.rqRxReset.Inc()
		st.s.peerReset.Store(true)
		if !st.responded {
			h.resetsSeen = true
		}
		h.dropStreamLocked(st)
		st.s.interrupt()
	}
	return h.fail
}

// onData hands a DATA frame's payload to its stream's request body.
func (h *h2Conn) onData(fh h2FrameHeader, p []byte) error {
	if fh.streamID == 0 {
		return connError(errCodeProtocol, "DATA on stream 0")
	}
	data, err := unpad(fh, p)
	if err != nil {
		return err
	}
	n := int64(len(p)) // padding counts against the windows too
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.streams.get(fh.streamID)
	if st == nil || st.remoteDone {
		if fh.streamID > h.lastID {
			return connError(errCodeProtocol, "DATA on an idle stream")
		}
		// A closed stream: its bytes still count against the
		// connection window, which is given back at once.
		h.creditConnLocked(n)
		switch {
		case st != nil:
			h.resetStreamLocked(st, errCodeStreamClosed)
		case !h.resetLately(fh.streamID):
			h.wbuf = appendRSTStream(h.wbuf, fh.streamID, errCodeStreamClosed)
			h.countFrameLocked(true)
			h.stats.txReset.Inc()
			h.kickLocked()
		}
		return nil
	}
	st.recvWindow -= n
	if st.recvWindow < 0 {
		h.creditConnLocked(n)
		h.resetStreamLocked(st, errCodeFlowControl)
		return nil
	}
	st.received += int64(len(data))
	st.in = append(st.in, data...)
	// Padding is consumed at once.
	h.creditLocked(st, n-int64(len(data)))
	if fh.flags&flagEndStream != 0 {
		st.remoteDone = true
	}
	if st.declared >= 0 && (st.received > st.declared || st.remoteDone && st.received != st.declared) {
		st.bodyErr = errBodyLength
		return h.badMessageLocked(st.id, st)
	}
	st.cond.Broadcast()
	return nil
}

// uint31 reads a 31-bit field (a stream identifier or a window
// increment) whose reserved high bit is ignored.
func uint31(p []byte) uint32 {
	return binary.BigEndian.Uint32(p) & (1<<31 - 1)
}

// errBodyLength: the DATA received does not add up to content-length.
var errBodyLength = errors.New("http/2 request body does not match content-length")

// unpad strips a padded frame's padding.
func unpad(fh h2FrameHeader, p []byte) ([]byte, error) {
	if fh.flags&flagPadded == 0 {
		return p, nil
	}
	if len(p) == 0 || int(p[0]) >= len(p) {
		return nil, connError(errCodeProtocol, "padding longer than the frame")
	}
	return p[1 : len(p)-int(p[0])], nil
}

// onHeaders starts a request, or receives its trailers.
func (h *h2Conn) onHeaders(fh h2FrameHeader, p []byte) error {
	id := fh.streamID
	if id == 0 || id%2 == 0 {
		return connError(errCodeProtocol, "HEADERS on a stream the client may not open")
	}
	block, err := unpad(fh, p)
	if err != nil {
		return err
	}
	selfDependent := false
	if fh.flags&flagPriority != 0 {
		if len(block) < 5 {
			return connError(errCodeFrameSize, "HEADERS too short for its priority")
		}
		selfDependent = uint31(block) == id
		block = block[5:]
	}
	endStream := fh.flags&flagEndStream != 0
	h.blockBytes = 0
	if id <= h.lastID {
		h.mu.Lock()
		open, ignore := h.streams.get(id) != nil, h.resetLately(id)
		h.mu.Unlock()
		if !open && !ignore {
			return connError(errCodeProtocol, "HEADERS on a closed or skipped stream")
		}
		// Trailers, which end a request body: decoded into h.trailer
		// (see addTrailer) and handed to the stream by endTrailers
		// once the block is complete.
		h.decoding = nil
		h.trailing, h.trailer, h.trailerBytes, h.trailerBad = true, nil, 0, false
		return h.onHeaderBlock(id, block, fh.flags&flagEndHeaders != 0, endStream)
	}
	h.mu.Lock()
	h.lastID = id
	refuse := h.goingAway || uint32(h.streams.len()) >= h.m.cfg.h2.maxStreams
	h.mu.Unlock()
	st := h.m.h2streams.Get().(*h2Stream)
	st.open(h, id, endStream, refuse)
	h.decoding = st
	h.decodeErr = errCodeNo
	// A stream error (RFC 9113 §5.3.1), answered once the block is
	// decoded.
	h.selfDep = selfDependent
	return h.onHeaderBlock(id, block, fh.flags&flagEndHeaders != 0, endStream)
}

// onHeaderBlock decodes a fragment of a header block, and dispatches the
// stream once the block is complete.
func (h *h2Conn) onHeaderBlock(id uint32, frag []byte, endHeaders, endStream bool) error {
	h.blockBytes += len(frag)
	if !endHeaders && h.blockBytes > h.m.cfg.maxRequestHeadersBytes {
		// A block that large can only decode to headers over the
		// limit: rather than reading it to its end, which a client
		// can put off forever, the connection ends now.
		h.stats.headerOverflow.Inc()
		return h2Flood("header block larger than max_request_headers_kb")
	}
	// A request block in one frame may be the one the memo remembers
	// (see h2BlockMemo), or one it should note.
	whole := endHeaders && h.decoding != nil && h.blockBytes == len(frag)
	gen := h.dec.Generation()
	if whole && h.reqMemo.replay(h.decoding, frag, gen) {
		return h.requestDecoded(id)
	}
	if _, err := h.dec.Write(frag); err != nil {
		return connError(errCodeCompression, err.Error())
	}
	if !endHeaders {
		if st := h.decoding; st != nil && st.tooLarge {
			// The headers decoded so far are over the limit already
			// and more are coming: the same as a block too large.
			h.stats.headerOverflow.Inc()
			return h2Flood("header list larger than max_request_headers_kb")
		}
		h.contStream, h.contEnd = id, endStream
		return nil
	}
	h.contStream = 0
	if err := h.dec.Close(); err != nil {
		return connError(errCodeCompression, err.Error())
	}
	st := h.decoding
	if st == nil {
		h.trailing = false
		return h.endTrailers(id, endStream)
	}
	if whole && h.decodeErr == errCodeNo && !st.tooLarge && h.dec.Generation() == gen {
		h.reqMemo.note(st, frag, gen)
	}
	return h.requestDecoded(id)
}

// requestDecoded starts the request whose header block was just decoded
// (or replayed), unless it is refused or malformed.
func (h *h2Conn) requestDecoded(id uint32) error {
	st := h.decoding
	h.decoding = nil
	if st.refused {
		h.m.h2streams.Put(st)
		h.resetStream(id, errCodeRefusedStream)
		return nil
	}
	if h.selfDep {
		h.m.h2streams.Put(st)
		h.resetStream(id, errCodeProtocol)
		return nil
	}
	if h.decodeErr != errCodeNo || !st.validRequest() {
		h.m.h2streams.Put(st)
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.badMessageLocked(id, nil)
	}
	h.start(st)
	return nil
}

// badMessageLocked handles a malformed request on stream id, st when the
// stream is open (RFC 9113 §8.1.1): counted in rx_messaging_error, it
// resets the stream when stream_error_on_invalid_http_messaging says so,
// and otherwise ends the connection, Envoy's default. h.mu is held.
func (h *h2Conn) badMessageLocked(id uint32, st *h2Stream) error {
	h.stats.rxMessagingError.Inc()
	if !h.m.cfg.h2.streamErrorOnInvalid {
		return connError(errCodeProtocol, "malformed request")
	}
	if st != nil {
		h.resetStreamLocked(st, errCodeProtocol)
	} else {
		h.appendResetLocked(id, errCodeProtocol)
	}
	return nil
}

// endTrailers ends a request body with its trailers. Trailers must end the
// stream, and come only on a stream whose body is still open.
func (h *h2Conn) endTrailers(id uint32, endStream bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.streams.get(id)
	switch {
	case st == nil:
		// Closed already (a reset may have crossed the trailers).
	case st.remoteDone:
		h.resetStreamLocked(st, errCodeStreamClosed)
	case !endStream:
		return h.badMessageLocked(id, st)
	default:
		h.stats.trailers.Inc()
		st.remoteDone = true
		if st.declared >= 0 && st.received != st.declared {
			st.bodyErr = errBodyLength
			return h.badMessageLocked(id, st)
		}
		if h.trailerBad {
			st.bodyErr = errBadTrailers
			return h.badMessageLocked(id, st)
		}
		st.reqTrailer, h.trailer = h.trailer, nil
		st.cond.Broadcast()
	}
	return nil
}

// emit receives one decoded header field. Its strings are views of the
// decoder's buffers: a request's fields are copied into its stream's
// buffer (see keep), trailers into strings of their own; those of the
// static table (":method: GET", ":scheme: https", the name "user-agent")
// are constants, kept without a copy.
func (h *h2Conn) emit(f hpack.Field) {
	if st := h.decoding; st != nil && h.decodeErr == errCodeNo {
		name, value := f.Name, f.Value
		if !f.StaticName {
			name = st.keepName(name)
		}
		if !f.StaticValue {
			value = st.keep(value)
		}
		if !st.addField(name, value) {
			h.decodeErr = errCodeProtocol
		}
	} else if h.trailing {
		h.addTrailer(f)
	}
}

// errBadTrailers: request trailers with a field no trailer may carry.
var errBadTrailers = errors.New("malformed http/2 request trailers")

// addTrailer records one decoded request trailer field. A pseudo-header,
// an upper-case name or a connection-specific field makes the message
// malformed, as Envoy's codec finds it; trailers decoding to more than
// max_request_headers_kb are refused the same way rather than kept.
func (h *h2Conn) addTrailer(f hpack.Field) {
	if h.trailerBad {
		return
	}
	h.trailerBytes += len(f.Name) + len(f.Value) + 32
	if h.trailerBytes > h.m.cfg.maxRequestHeadersBytes {
		h.stats.headerOverflow.Inc()
		h.trailerBad = true
		return
	}
	if f.Name == "" || f.Name[0] == ':' || f.Name != strings.ToLower(f.Name) || connectionSpecific(f.Name) ||
		(f.Name == "te" && f.Value != "trailers") {
		h.trailerBad = true
		return
	}
	if h.trailer == nil {
		h.trailer = make(http.Header, 2)
	}
	h.trailer.Add(strings.Clone(f.Name), strings.Clone(f.Value))
}

// start registers a complete request; it runs, in its own goroutine, once
// the input read with it is handled (see dispatch).
func (h *h2Conn) start(st *h2Stream) {
	h.served++
	h.mu.Lock()
	h.streams.put(st)
	h.mu.Unlock()
	h.stats.streamsActive.Inc()
	if max := h.m.cfg.maxRequestsPerConnection; max > 0 && h.served >= max {
		st.lastAllowed = true
	}
	h.pending = append(h.pending, st)
}

// resetLately reports whether the server reset stream id lately; h.mu is
// held.
func (h *h2Conn) resetLately(id uint32) bool {
	for _, r := range h.resetIDs {
		if r == id {
			return true
		}
	}
	return false
}

// appendResetLocked queues RST_STREAM for id and remembers it (see
// resetIDs).
func (h *h2Conn) appendResetLocked(id uint32, code h2ErrCode) {
	h.wbuf = appendRSTStream(h.wbuf, id, code)
	h.countFrameLocked(true)
	h.stats.txReset.Inc()
	h.resetIDs[h.resetNext] = id
	h.resetNext = (h.resetNext + 1) % len(h.resetIDs)
	h.kickLocked()
}

// resetStream sends RST_STREAM for id and forgets the stream.
func (h *h2Conn) resetStream(id uint32, code h2ErrCode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.streams.get(id); st != nil {
		h.resetStreamLocked(st, code)
		return
	}
	h.appendResetLocked(id, code)
}

// resetStreamLocked sends RST_STREAM for st, stops its goroutine's work
// and forgets it.
func (h *h2Conn) resetStreamLocked(st *h2Stream, code h2ErrCode) {
	if !st.localDone || !st.remoteDone {
		h.appendResetLocked(st.id, code)
		h.m.stats.rqTxReset.Inc()
	}
	h.dropStreamLocked(st)
	st.s.interrupt()
}

// dropStreamLocked closes both sides of st and removes it from the
// table; its goroutine sees the reset and finishes.
func (h *h2Conn) dropStreamLocked(st *h2Stream) {
	st.reset, st.localDone, st.remoteDone = true, true, true
	st.cond.Broadcast()
	h.forgetLocked(st)
}

// forgetLocked removes st from the table once: flow-control credit it held
// goes back to the connection.
func (h *h2Conn) forgetLocked(st *h2Stream) {
	if h.streams.get(st.id) != st {
		return
	}
	h.streams.remove(st.id)
	h.stats.streamsActive.Dec()
	h.streamEndedLocked(st)
	h.creditConnLocked(int64(len(st.in)))
	st.in = st.in[:0]
	if h.streams.len() == 0 {
		h.idleSince = time.Now()
		switch {
		case h.goingAway, h.fail != nil:
			// Wake the read loop: the connection ends.
			h.wakeReaderLocked()
		case h.draining:
			// The final GOAWAY will end it.
		case h.wakePendingLocked():
			// The read loop was woken and has not looked yet: a later
			// deadline now would cancel the wake-up (the poller re-arms
			// a wait whose deadline moved to the future), leaving the
			// connection stuck. The read loop arms the idle timeout
			// itself (awaitFrame).
		default:
			// Arm the idle timeout under the read loop's blocked
			// read, rather than waking it to do so.
			if at := after(h.idleSince, h.m.idleTimeout()); !at.IsZero() {
				_ = h.c.nc.SetReadDeadline(at)
				h.rdStale, h.rdArmed = true, at
			}
		}
	}
}

// creditLocked gives n bytes of flow-control credit back for st and the
// connection, in WINDOW_UPDATEs once half a window is owed.
func (h *h2Conn) creditLocked(st *h2Stream, n int64) {
	if n <= 0 {
		return
	}
	h.creditConnLocked(n)
	if st.remoteDone {
		return
	}
	st.recvUnacked += n
	if st.recvUnacked >= int64(h.m.cfg.h2.streamWindow)/2 {
		st.recvWindow += st.recvUnacked
		h.wbuf = appendWindowUpdate(h.wbuf, st.id, uint32(st.recvUnacked))
		h.countFrameLocked(false)
		st.recvUnacked = 0
		h.kickLocked()
	}
}

// creditConnLocked gives n bytes of connection-level credit back.
func (h *h2Conn) creditConnLocked(n int64) {
	if n <= 0 {
		return
	}
	h.recvUnacked += n
	if h.recvUnacked >= int64(h.m.cfg.h2.connWindow)/2 {
		h.wbuf = appendWindowUpdate(h.wbuf, 0, uint32(h.recvUnacked))
		h.countFrameLocked(false)
		h.recvUnacked = 0
		h.kickLocked()
	}
}

// goAway starts a graceful close: a GOAWAY naming the last stream the
// client opened, no new streams, and the connection ends when the open
// ones are done.
func (h *h2Conn) goAway(code h2ErrCode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.goAwayLocked(code)
}

func (h *h2Conn) goAwayLocked(code h2ErrCode) {
	if h.goingAway {
		return
	}
	if h.drainTimer != nil {
		h.drainTimer.Stop()
	}
	h.goingAway, h.goAwayID = true, h.lastID
	h.appendGoAwayLocked(h.goAwayID, code)
	h.kickLocked()
	if h.streams.len() == 0 {
		h.wakeReaderLocked()
	}
}

// h2LastStreamID is the largest stream identifier, which the drain
// sequence's first GOAWAY carries.
const h2LastStreamID = 1<<31 - 1

// startDrain starts the drain sequence (see startDrainLocked).
func (h *h2Conn) startDrain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.startDrainLocked()
}

// startDrainLocked starts Envoy's drain sequence: a GOAWAY that announces
// the end without refusing anything (its last stream is 2^31-1, so the
// requests already on their way are served), then, drain_timeout later,
// the final GOAWAY naming the last stream the client opened; the
// connection ends once its streams are done. With drain_timeout 0 the
// final GOAWAY goes at once. h.mu is held.
func (h *h2Conn) startDrainLocked() {
	if h.draining || h.goingAway {
		return
	}
	t := h.m.cfg.drainTimeout
	if t <= 0 {
		h.goAwayLocked(errCodeNo)
		return
	}
	t = jittered(t, h.m.cfg.drainTimeoutJitter, rand.Float64)
	h.draining = true
	h.appendGoAwayLocked(h2LastStreamID, errCodeNo)
	h.kickLocked()
	h.drainTimer = time.AfterFunc(t, func() { h.goAway(errCodeNo) })
}

// wakeReaderLocked makes the read loop's read return at once (a deadline
// in the past), so that it looks at the connection's state.
func (h *h2Conn) wakeReaderLocked() {
	_ = h.c.nc.SetReadDeadline(wakeDeadline())
	h.rdStale, h.rdArmed = true, wakeDeadline()
}

// wakeDeadline is the read deadline in the past that wakes the read loop.
func wakeDeadline() time.Time { return time.Unix(1, 0) }

// wakePendingLocked reports whether the read loop was woken
// (wakeReaderLocked) and has not yet looked at the connection's state.
func (h *h2Conn) wakePendingLocked() bool {
	return h.rdStale && h.rdArmed.Equal(wakeDeadline())
}

// kickLocked wakes the writer, unless it is gone.
func (h *h2Conn) kickLocked() {
	if h.closed {
		return
	}
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// appendGoAwayLocked queues a GOAWAY frame. It is not counted against the
// outbound limits: a connection sends two at most, and the one that ends a
// flood must not count as another.
func (h *h2Conn) appendGoAwayLocked(lastID uint32, code h2ErrCode) {
	h.wbuf = appendGoAway(h.wbuf, lastID, code)
	h.stats.goAwaySent.Inc()
}

// countFrameLocked accounts for a frame just queued (see h2Guard.queue):
// past an outbound limit, the connection ends.
func (h *h2Conn) countFrameLocked(control bool) {
	if err := h.guard.queue(control); err != nil {
		h.failLocked(err)
	}
}

// failLocked makes the connection end at the read loop's next look, for
// err; the first reason wins. The read loop is woken, and so are the
// streams waiting to write, which then fail.
func (h *h2Conn) failLocked(err error) {
	if h.fail != nil {
		return
	}
	h.fail = err
	h.wakeReaderLocked()
	for st := range h.streams.all() {
		st.cond.Broadcast()
	}
	if isOutboundFlood(err) {
		// The client does not read: the write under way, if any, gets
		// a short time to finish, not the stream idle timeout.
		_ = h.c.nc.SetWriteDeadline(time.Now().Add(lingerTime))
	}
}

// writeLoop writes what the connection's goroutines queue, until finish
// closes kick.
func (h *h2Conn) writeLoop() {
	defer close(h.done)
	for range h.kick {
		// Let the goroutines that are ready add their frames first,
		// so that they leave in one write.
		runtime.Gosched()
		h.writePending()
	}
	h.writePending()
}

// writePending writes the queued output, under a write deadline so that a
// client that stops reading cannot hold the connection forever.
func (h *h2Conn) writePending() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.wbuf) > 0 && h.werr == nil {
		buf := h.wbuf
		h.wbuf, h.spare = h.spare[:0], nil
		h.wgen++
		frames, control := h.guard.take(), h.guard.inflightControl
		h.inflightBytes = len(buf)
		timeout := h.writeTimeoutLocked()
		if h.bufWaiters > 0 {
			// The output drained: the streams waiting for room go on.
			for st := range h.streams.all() {
				st.cond.Broadcast()
			}
		}
		h.mu.Unlock()
		h.stats.pendingSendBytes.Add(int64(len(buf)))
		h.stats.outboundFramesActive.Add(int64(frames))
		h.stats.outboundControlFramesActive.Add(int64(control))
		// The slack is the timeout's own: a fixed second would keep a
		// deadline already past when the timeout is shorter and the
		// writes further apart (a stream held by a filter).
		if d := after(time.Now(), timeout); h.wd.needWithin(d, slackOf(timeout)) {
			_ = h.c.nc.SetWriteDeadline(d)
		}
		_, err := h.c.cc.Write(buf)
		h.stats.pendingSendBytes.Add(-int64(len(buf)))
		h.stats.outboundFramesActive.Add(-int64(frames))
		h.stats.outboundControlFramesActive.Add(-int64(control))
		h.mu.Lock()
		h.guard.written()
		h.inflightBytes = 0
		h.spare = buf[:0]
		if err != nil {
			h.werr = err
			h.closed = true
			for st := range h.streams.all() {
				st.cond.Broadcast()
			}
			// Wake the read loop: the connection is dead.
			_ = h.c.nc.Close()
		}
	}
}

// writeTimeoutLocked bounds one write: the stream idle timeout, or the
// idle timeout when that is off; a short time once the connection is cut
// off for not reading (an outbound flood). h.mu is held.
func (h *h2Conn) writeTimeoutLocked() time.Duration {
	if isOutboundFlood(h.fail) {
		return lingerTime
	}
	if t := h.m.scaleStreamIdle(h.m.cfg.streamIdleTimeout); t > 0 {
		return t
	}
	return h.m.idleTimeout()
}

// finish ends the connection: a connection error is sent as GOAWAY, the
// streams still running are stopped and waited for, what is queued is
// written, and the socket closes.
func (h *h2Conn) finish(err error) {
	c := h.c
	var ce *h2ConnError
	switch {
	case errors.As(err, &ce):
		if ce.code != errCodeEnhanceYourCalm {
			// Floods and other abuse have stats of their own, as in
			// Envoy.
			h.m.stats.cxProtocolError.Inc()
		}
		h.mu.Lock()
		if isOutboundFlood(err) {
			// The client does not read what it asked for: what is
			// queued for it goes, only the GOAWAY is offered.
			h.wbuf = h.wbuf[:0]
			h.guard.drop()
		}
		h.appendGoAwayLocked(h.lastID, ce.code)
		h.mu.Unlock()
	case err == nil || errors.Is(err, errIdle):
		h.goAway(errCodeNo)
	default:
		c.remoteClosed = true
	}
	h.mu.Lock()
	h.ending = true
	if h.drainTimer != nil {
		h.drainTimer.Stop()
	}
	open := h.streams.len()
	for st := range h.streams.all() {
		h.dropStreamLocked(st)
		st.s.interrupt()
	}
	h.mu.Unlock()
	if open > 0 {
		h.c.destroyedActive()
	}
	// Streams opened by the last input and never started end here.
	for i, st := range h.pending {
		h.pending[i] = nil
		h.m.h2streams.Put(st)
	}
	h.pending = nil
	h.wg.Wait()
	h.workers.stop()
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	close(h.kick)
	<-h.done
	switch {
	case c.remoteClosed:
		_ = c.nc.Close()
	case isOutboundFlood(err):
		// The client sends and does not read: what it still sends is
		// not read either (it would cost as much as the flood), and
		// it gets a moment to read the GOAWAY before the close.
		closeAfterAMoment(c)
	case isAbuse(err):
		// An inbound flood, or too many early resets: the client is
		// still sending, and reading all of it for the delayed close
		// would cost what the limit saved. The GOAWAY has gone out;
		// the close follows the little the client sent meanwhile.
		lingeringClose(c, abuseLingerBytes)
	case c.closingNow():
		// The server is shutting down, and does not wait for
		// delayed_close_timeout: a short linger keeps the GOAWAY and
		// the last responses from being lost to a reset.
		lingeringClose(c, maxLingerBytes)
	default:
		// The write side closes at once (the GOAWAY is the last
		// frame), then the client gets delayed_close_timeout to close
		// its side, as in Envoy.
		c.delayedClose(true)
	}
}

// lingerTime bounds how long a connection closing at shutdown reads what
// the client still sends, and how long a client that does not read has to
// take the GOAWAY of an outbound flood.
const lingerTime = time.Second

// closeAfterAMoment closes the write side, then the connection once
// lingerTime passed or the manager closes, reading nothing meanwhile.
func closeAfterAMoment(c *serverConn) {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	t := time.NewTimer(lingerTime)
	select {
	case <-t.C:
	case <-c.m.closed:
		t.Stop()
	}
	_ = c.nc.Close()
}

// lingeringClose closes the connection without losing what was sent: the
// write side closes first, then what the client still sends (frames that
// crossed the GOAWAY) is read and dropped until it closes too, a second
// passes or limit bytes were dropped (a client still sending that much is
// not waiting for anything). Closing a socket with unread input would
// reset it, and the client might lose the GOAWAY and the last responses
// with it.
func lingeringClose(c *serverConn, limit int64) {
	tc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || tc.CloseWrite() != nil {
		_ = c.nc.Close()
		return
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, c.input(), limit)
	_ = c.nc.Close()
}

// abuseLingerBytes bounds what a connection closed for abuse reads before
// its close: enough for the frames that crossed the GOAWAY of a client
// that stopped, not for a flood that goes on.
const abuseLingerBytes = 16 << 10

// cut interrupts every stream's upstream exchange (a forced shutdown).
func (h *h2Conn) cut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for st := range h.streams.all() {
		st.s.interrupt()
	}
}
