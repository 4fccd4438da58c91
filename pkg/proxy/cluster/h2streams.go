package cluster

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"net"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// HTTP/2 frame facts the stream cap needs (RFC 9113 §4.1, §6.5).
const (
	h2FrameHeaderLen      = 9
	h2FrameSettings       = 0x4
	h2FlagAck             = 0x1
	h2SettingMaxStreams   = 0x3
	h2SettingLen          = 6
	h2DefaultMaxFrameSize = 1 << 14
)

// streamCapConn applies a cluster's http2_protocol_options
// max_concurrent_streams to an upstream connection. Go's HTTP/2 transport
// takes the stream limit from the server's SETTINGS only, and opens
// another connection when a connection is full; so the cap is applied
// there: every SETTINGS frame the server sends is read whole and its
// SETTINGS_MAX_CONCURRENT_STREAMS lowered to the cap (added when the
// server sets none, which means no limit). Other frames pass through
// without a copy. The transport's single reader goroutine is the only
// caller of Read.
type streamCapConn struct {
	net.Conn
	max uint32
	// server is the server's own limit so far (none: the largest
	// value), so that a later SETTINGS without the setting, which leaves
	// it unchanged, is not taken to raise it.
	server uint32

	hdr [h2FrameHeaderLen]byte
	// pending are rewritten bytes, or a passed frame's header, not yet
	// returned.
	pending []byte
	// remain is how much of a passed frame's payload is still to read.
	remain int
	// settled is called once, when the transport has applied the
	// server's first SETTINGS (it reads again after processing a frame)
	// or the connection failed before that; delivered is set when that
	// frame has been handed over.
	settled   func()
	delivered bool
}

// newStreamCapConn caps c's streams at max (above 0); settled is called
// once the cap is in force, or the connection failed first.
func newStreamCapConn(c net.Conn, max uint32, settled func()) *streamCapConn {
	return &streamCapConn{Conn: c, max: max, server: math.MaxUint32, settled: settled}
}

// settle calls settled once.
func (c *streamCapConn) settle() {
	if f := c.settled; f != nil {
		c.settled = nil
		f()
	}
}

// Read implements net.Conn.
func (c *streamCapConn) Read(p []byte) (n int, err error) {
	if c.delivered && len(c.pending) == 0 {
		// The transport reads again: it has processed the SETTINGS.
		c.settle()
	}
	defer func() {
		if err != nil {
			c.settle()
		}
	}()
	for {
		if len(c.pending) > 0 {
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			return n, nil
		}
		if c.remain > 0 {
			if len(p) > c.remain {
				p = p[:c.remain]
			}
			n, err := c.Conn.Read(p)
			c.remain -= n
			return n, err
		}
		if _, err := io.ReadFull(c.Conn, c.hdr[:]); err != nil {
			return 0, err
		}
		length := int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		if c.hdr[3] != h2FrameSettings || c.hdr[4]&h2FlagAck != 0 || length > h2DefaultMaxFrameSize || length%h2SettingLen != 0 {
			// Not a SETTINGS to rewrite (a malformed one is left for
			// the transport to refuse).
			c.pending = append(c.pending[:0], c.hdr[:]...)
			c.remain = length
			continue
		}
		frame := make([]byte, h2FrameHeaderLen, h2FrameHeaderLen+length+h2SettingLen)
		copy(frame, c.hdr[:])
		frame = frame[:h2FrameHeaderLen+length]
		if _, err := io.ReadFull(c.Conn, frame[h2FrameHeaderLen:]); err != nil {
			return 0, err
		}
		c.pending = c.capSettings(frame)
		c.delivered = true
	}
}

// capSettings lowers the stream limit of a SETTINGS frame (header and
// payload) to the cap, adding the setting when the frame has none, and
// returns the frame to pass on.
func (c *streamCapConn) capSettings(frame []byte) []byte {
	found := false
	for off := h2FrameHeaderLen; off+h2SettingLen <= len(frame); off += h2SettingLen {
		if binary.BigEndian.Uint16(frame[off:]) != h2SettingMaxStreams {
			continue
		}
		found = true
		c.server = binary.BigEndian.Uint32(frame[off+2:])
		if c.server > c.max {
			binary.BigEndian.PutUint32(frame[off+2:], c.max)
		}
	}
	if found {
		return frame
	}
	var s [h2SettingLen]byte
	binary.BigEndian.PutUint16(s[:], h2SettingMaxStreams)
	binary.BigEndian.PutUint32(s[2:], min(c.server, c.max))
	frame = append(frame, s[:]...)
	n := len(frame) - h2FrameHeaderLen
	frame[0], frame[1], frame[2] = byte(n>>16), byte(n>>8), byte(n)
	return frame
}

// openingConns counts a cluster's HTTP/2 connections whose stream cap is
// not in force yet. Until the transport has read the server's SETTINGS it
// takes a new connection for up to 100 streams, so requests wait for the
// connections still opening before they choose one: only requests that
// arrive together while a connection opens may exceed the cap on it.
type openingConns struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0
}

// add counts a connection opening.
func (o *openingConns) add() {
	o.mu.Lock()
	if o.n == 0 {
		o.zero = make(chan struct{})
	}
	o.n++
	o.mu.Unlock()
}

// done counts a connection settled.
func (o *openingConns) done() {
	o.mu.Lock()
	o.n--
	if o.n == 0 {
		close(o.zero)
	}
	o.mu.Unlock()
}

// wait waits until no connection is opening, ctx ends, or limit passes.
func (o *openingConns) wait(ctx context.Context, limit time.Duration) {
	o.mu.Lock()
	n, zero := o.n, o.zero
	o.mu.Unlock()
	if n == 0 {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-zero:
	case <-ctx.Done():
	case <-t.C:
	}
}

// TLSInfo is the capped connection's (see trackedConn.TLSInfo).
func (c *streamCapConn) TLSInfo() *accesslog.TLSInfo { return accesslog.UpstreamTLS(c.Conn) }
