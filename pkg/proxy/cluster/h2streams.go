package cluster

import (
	"encoding/binary"
	"io"
	"math"
	"net"
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
}

// newStreamCapConn caps c's streams at max (above 0).
func newStreamCapConn(c net.Conn, max uint32) *streamCapConn {
	return &streamCapConn{Conn: c, max: max, server: math.MaxUint32}
}

// Read implements net.Conn.
func (c *streamCapConn) Read(p []byte) (int, error) {
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
