package httpconn

import (
	"encoding/binary"
	"fmt"
)

// HTTP/2 framing (RFC 9113 §4 and §6): the frame types, flags, settings
// and error codes the server speaks, and appenders that serialise frames
// straight into the connection's output buffer.

// h2FrameType is a frame's type octet.
type h2FrameType uint8

// The frame types of RFC 9113 §6.
const (
	frameData         h2FrameType = 0x0
	frameHeaders      h2FrameType = 0x1
	framePriority     h2FrameType = 0x2
	frameRSTStream    h2FrameType = 0x3
	frameSettings     h2FrameType = 0x4
	framePushPromise  h2FrameType = 0x5
	framePing         h2FrameType = 0x6
	frameGoAway       h2FrameType = 0x7
	frameWindowUpdate h2FrameType = 0x8
	frameContinuation h2FrameType = 0x9
)

// Frame flags; each is defined for some frame types only.
const (
	flagEndStream  = 0x1 // DATA, HEADERS
	flagAck        = 0x1 // SETTINGS, PING
	flagEndHeaders = 0x4 // HEADERS, CONTINUATION
	flagPadded     = 0x8 // DATA, HEADERS
	flagPriority   = 0x20
)

// h2ErrCode is an error code of RST_STREAM and GOAWAY (RFC 9113 §7).
type h2ErrCode uint32

// The error codes the server sends.
const (
	errCodeNo            h2ErrCode = 0x0
	errCodeProtocol      h2ErrCode = 0x1
	errCodeInternal      h2ErrCode = 0x2
	errCodeFlowControl   h2ErrCode = 0x3
	errCodeStreamClosed  h2ErrCode = 0x5
	errCodeFrameSize     h2ErrCode = 0x6
	errCodeRefusedStream h2ErrCode = 0x7
	errCodeCompression   h2ErrCode = 0x9
)

// Settings identifiers (RFC 9113 §6.5.2).
const (
	settingEnablePush           = 0x2
	settingMaxConcurrentStreams = 0x3
	settingInitialWindowSize    = 0x4
	settingMaxFrameSize         = 0x5
	settingMaxHeaderListSize    = 0x6
	// settingEnableConnectProtocol announces extended CONNECT (RFC
	// 8441 §3).
	settingEnableConnectProtocol = 0x8
)

// Protocol limits and defaults.
const (
	h2FrameHeaderLen = 9
	// h2DefaultMaxFrame is the largest frame payload either side may
	// send until told otherwise; the server never raises its own.
	h2DefaultMaxFrame = 16384
	h2MaxFrameLimit   = 1<<24 - 1
	h2DefaultWindow   = 65535
	h2MaxWindow       = 1<<31 - 1
)

// h2FrameHeader is a parsed frame header.
type h2FrameHeader struct {
	length   uint32
	typ      h2FrameType
	flags    uint8
	streamID uint32
}

// parseFrameHeader reads the 9 octets of a frame header; the reserved bit
// of the stream identifier is ignored, as the RFC asks.
func parseFrameHeader(b []byte) h2FrameHeader {
	return h2FrameHeader{
		length:   uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:      h2FrameType(b[3]),
		flags:    b[4],
		streamID: uint31(b[5:9]),
	}
}

// appendFrameHeader appends a frame header.
func appendFrameHeader(dst []byte, length int, typ h2FrameType, flags uint8, streamID uint32) []byte {
	return append(dst, byte(length>>16), byte(length>>8), byte(length), byte(typ), flags,
		byte(streamID>>24), byte(streamID>>16), byte(streamID>>8), byte(streamID))
}

// appendUint32 appends v in network order.
func appendUint32(dst []byte, v uint32) []byte {
	return binary.BigEndian.AppendUint32(dst, v)
}

// appendRSTStream appends an RST_STREAM frame.
func appendRSTStream(dst []byte, streamID uint32, code h2ErrCode) []byte {
	dst = appendFrameHeader(dst, 4, frameRSTStream, 0, streamID)
	return appendUint32(dst, uint32(code))
}

// appendWindowUpdate appends a WINDOW_UPDATE frame.
func appendWindowUpdate(dst []byte, streamID uint32, increment uint32) []byte {
	dst = appendFrameHeader(dst, 4, frameWindowUpdate, 0, streamID)
	return appendUint32(dst, increment)
}

// appendGoAway appends a GOAWAY frame.
func appendGoAway(dst []byte, lastStreamID uint32, code h2ErrCode) []byte {
	dst = appendFrameHeader(dst, 8, frameGoAway, 0, 0)
	dst = appendUint32(dst, lastStreamID)
	return appendUint32(dst, uint32(code))
}

// appendSettings appends a SETTINGS frame with the given identifier and
// value pairs.
func appendSettings(dst []byte, pairs ...uint32) []byte {
	dst = appendFrameHeader(dst, len(pairs)/2*6, frameSettings, 0, 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		dst = append(dst, byte(pairs[i]>>8), byte(pairs[i]))
		dst = appendUint32(dst, pairs[i+1])
	}
	return dst
}

// h2ConnError is a connection error (RFC 9113 §5.4.1): the connection
// ends with a GOAWAY carrying code.
type h2ConnError struct {
	code   h2ErrCode
	reason string
}

func (e *h2ConnError) Error() string {
	return fmt.Sprintf("http/2 connection error %d: %s", e.code, e.reason)
}

// connError builds a connection error.
func connError(code h2ErrCode, reason string) error {
	return &h2ConnError{code: code, reason: reason}
}
