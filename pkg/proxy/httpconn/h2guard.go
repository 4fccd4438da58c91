package httpconn

import (
	"errors"
	"sync/atomic"
)

// errCodeEnhanceYourCalm is the GOAWAY code of a connection cut off for
// abuse: a flood, too many premature resets, an endless header block
// (RFC 9113 §7).
const errCodeEnhanceYourCalm h2ErrCode = 0xb

// h2Guard holds the per-connection counts behind the HTTP/2 flood limits
// (Envoy's protocol constraints): frames waiting to be written to the
// client, and the inbound frames that cost work without carrying any.
// Crossing a limit is a connection error with ENHANCE_YOUR_CALM and a stat
// of its own.
type h2Guard struct {
	lim   *h2Settings
	stats *h2Stats

	// The read side, the read loop's own.
	emptyRun       uint32 // consecutive frames with an empty payload
	inboundStreams uint64 // header blocks received (requests and trailers)
	priority       uint64 // PRIORITY frames received
	windowUpdates  uint64 // WINDOW_UPDATE frames received

	// dataSent counts the DATA frames sent, which earn the client
	// WINDOW_UPDATE frames; written under h2Conn.mu, read by the read
	// loop.
	dataSent atomic.Uint64

	// The write side, under h2Conn.mu: frames (and control frames among
	// them) queued in the output buffer, and in the buffer the writer is
	// writing.
	queued, queuedControl     uint32
	inflight, inflightControl uint32
	// flooded: an outbound limit was crossed; the frames queued after
	// that (the connection is ending) are not checked again.
	flooded bool
}

// h2Flood is a flood limit crossed: the connection ends with
// ENHANCE_YOUR_CALM.
func h2Flood(reason string) *h2ConnError {
	return &h2ConnError{code: errCodeEnhanceYourCalm, reason: reason}
}

// The errors of the outbound limits. They are values so that the
// connection can tell them apart: an outbound flood means the client does
// not read, so what is queued for it is dropped.
var (
	errOutboundFlood        = h2Flood("too many frames in the outbound queue")
	errOutboundControlFlood = h2Flood("too many control frames in the outbound queue")
)

// isAbuse reports whether err ends a connection for abuse: a flood limit
// crossed, too many premature resets, an endless header block.
func isAbuse(err error) bool {
	var ce *h2ConnError
	return errors.As(err, &ce) && ce.code == errCodeEnhanceYourCalm
}

// isOutboundFlood reports whether err is an outbound flood.
func isOutboundFlood(err error) bool {
	return err == errOutboundFlood || err == errOutboundControlFlood
}

// inbound accounts for a frame about to be handled, of payload bytes
// after padding, and checks the inbound limits.
func (g *h2Guard) inbound(fh h2FrameHeader, payload int) error {
	switch fh.typ {
	case frameHeaders, frameContinuation:
		if fh.flags&flagEndHeaders != 0 {
			g.inboundStreams++
		}
		g.trackEmpty(fh, payload)
	case frameData:
		g.trackEmpty(fh, payload)
	case framePriority:
		g.priority++
	case frameWindowUpdate:
		g.windowUpdates++
	default:
		return nil
	}
	lim := g.lim
	switch {
	case g.emptyRun > lim.maxEmptyFrames:
		g.stats.inboundEmptyFramesFlood.Inc()
		return h2Flood("too many consecutive frames with an empty payload")
	case g.priority > uint64(lim.maxPriorityPerStream)*(1+g.inboundStreams):
		g.stats.inboundPriorityFramesFlood.Inc()
		return h2Flood("too many PRIORITY frames")
	case g.windowUpdates > 1+2*(g.inboundStreams+uint64(lim.maxWindowUpdatePerData)*g.dataSent.Load()):
		g.stats.inboundWindowUpdateFramesFlood.Inc()
		return h2Flood("too many WINDOW_UPDATE frames")
	}
	return nil
}

// trackEmpty counts a run of HEADERS, CONTINUATION and DATA frames that
// carry nothing and do not end their stream.
func (g *h2Guard) trackEmpty(fh h2FrameHeader, payload int) {
	if payload == 0 && fh.flags&flagEndStream == 0 {
		g.emptyRun++
		return
	}
	g.emptyRun = 0
}

// queue accounts for one frame appended to the output buffer and checks
// the outbound limits; h2Conn.mu is held. Control frames are the PING and
// SETTINGS acknowledgements and RST_STREAMs: a client can make the server
// send them at will.
func (g *h2Guard) queue(control bool) error {
	g.queued++
	if control {
		g.queuedControl++
	}
	if g.flooded {
		return nil
	}
	switch {
	case g.queued+g.inflight > g.lim.maxOutboundFrames:
		g.flooded = true
		g.stats.outboundFlood.Inc()
		return errOutboundFlood
	case g.queuedControl+g.inflightControl > g.lim.maxOutboundControlFrames:
		g.flooded = true
		g.stats.outboundControlFlood.Inc()
		return errOutboundControlFlood
	}
	return nil
}

// take moves the queued frames to the writer, which writes them next;
// h2Conn.mu is held. It returns how many frames it moved.
func (g *h2Guard) take() uint32 {
	n := g.queued
	g.inflight += n
	g.inflightControl += g.queuedControl
	g.queued, g.queuedControl = 0, 0
	return n
}

// written releases the frames of a write that ended; h2Conn.mu is held.
func (g *h2Guard) written() {
	g.inflight, g.inflightControl = 0, 0
}

// drop forgets the queued frames, which will never be written;
// h2Conn.mu is held.
func (g *h2Guard) drop() {
	g.queued, g.queuedControl = 0, 0
}
