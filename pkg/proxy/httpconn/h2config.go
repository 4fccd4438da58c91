package httpconn

import (
	"net"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// The HTTP/2 server's defaults for what http2_protocol_options leaves
// unset.
const (
	// The limit on concurrent HTTP/2 streams per connection. Envoy's
	// default is no limit; each open stream here holds a goroutine, so a
	// client must not be able to open billions: the default is bounded,
	// as Go's, nginx's and haproxy's are (250, 128, 100).
	defaultH2MaxStreams = 1024
	// The HTTP/2 receive windows. Envoy announces 256 MiB and keeps its
	// buffers in check by pausing reads; Outrigger buffers what a window
	// lets in, so its defaults are those of Go's HTTP/2 server.
	defaultH2StreamWindow = 256 << 10
	defaultH2ConnWindow   = 1 << 20

	// Envoy's flood limits (Http2ProtocolOptions), with its defaults.
	defaultH2MaxOutboundFrames        = 10000
	defaultH2MaxOutboundControlFrames = 1000
	defaultH2MaxEmptyFrames           = 1
	defaultH2MaxPriorityPerStream     = 100
	defaultH2MaxWindowUpdatePerData   = 10

	// defaultHPACKTableSize is HPACK's own (RFC 9113 §6.5.2).
	defaultHPACKTableSize = 4096
)

// h2Settings are the HTTP/2 server's settings and the limits that protect
// it from abusive clients, read from http2_protocol_options.
type h2Settings struct {
	// maxStreams bounds the streams a connection may have open;
	// streamWindow and connWindow are the receive windows the server
	// announces, which bound the request body bytes it buffers per
	// stream and per connection.
	maxStreams   uint32
	streamWindow uint32
	connWindow   uint32

	// maxOutboundFrames bounds the frames queued for a client and not
	// yet written to its socket, maxOutboundControlFrames the PING,
	// SETTINGS and RST_STREAM frames among them: a client that makes the
	// server answer without reading the answers is cut off.
	maxOutboundFrames        uint32
	maxOutboundControlFrames uint32
	// maxEmptyFrames bounds consecutive HEADERS, CONTINUATION and DATA
	// frames with no payload and no END_STREAM, which cost work and
	// carry nothing.
	maxEmptyFrames uint32
	// maxPriorityPerStream bounds PRIORITY frames: at most that many per
	// stream the client opened, plus one stream's worth.
	maxPriorityPerStream uint32
	// maxWindowUpdatePerData bounds WINDOW_UPDATE frames by the DATA
	// frames the server sent (Envoy's formula, see h2Guard).
	maxWindowUpdatePerData uint32
	// streamErrorOnInvalid: a malformed request resets its stream only;
	// otherwise (Envoy's default) it ends the connection.
	streamErrorOnInvalid bool
	// allowConnect: extended CONNECT (RFC 8441) is announced and
	// accepted, carrying WebSockets and other upgrades.
	allowConnect bool
	// keepalive is connection_keepalive.
	keepalive h2KeepaliveSettings

	// hpackTableSize is the SETTINGS_HEADER_TABLE_SIZE announced: the
	// most the client's encoder may keep in the dynamic table the
	// connection's decoder mirrors (the server's own encoder never
	// indexes, so it keeps within any bound).
	hpackTableSize uint32
	// noHuffman: response strings are sent as they are, never
	// Huffman-coded (enable_huffman_encoding false).
	noHuffman bool
	// maxFieldWireBytes bounds a request field's name or value as it
	// lies on the wire (HPACK-coded), 0 for no bound of its own
	// (max_header_field_size_kb).
	maxFieldWireBytes int
	// customSettings are the identifier and value pairs of
	// custom_settings_parameters, sent before the named settings.
	customSettings []uint32
	// resetBurst and resetRate are the RST_STREAM token bucket
	// (stream_reset_burst, stream_reset_rate; see h2resetrate.go).
	resetBurst, resetRate uint64
	// disallowObsText: a request field value with a byte of 0x80 or more
	// is malformed (disallow_obs_text).
	disallowObsText bool
}

// readH2Settings reads http2_protocol_options. The API's own constraints
// (validated before) keep every limit at 1 or more.
func readH2Settings(cfg *hcmv3.HttpConnectionManager) h2Settings {
	h2 := cfg.GetHttp2ProtocolOptions()
	s := h2Settings{
		maxStreams:               orUint32(h2.GetMaxConcurrentStreams().GetValue(), h2.GetMaxConcurrentStreams() != nil, defaultH2MaxStreams),
		streamWindow:             orUint32(h2.GetInitialStreamWindowSize().GetValue(), h2.GetInitialStreamWindowSize() != nil, defaultH2StreamWindow),
		connWindow:               orUint32(h2.GetInitialConnectionWindowSize().GetValue(), h2.GetInitialConnectionWindowSize() != nil, defaultH2ConnWindow),
		maxOutboundFrames:        orUint32(h2.GetMaxOutboundFrames().GetValue(), h2.GetMaxOutboundFrames() != nil, defaultH2MaxOutboundFrames),
		maxOutboundControlFrames: orUint32(h2.GetMaxOutboundControlFrames().GetValue(), h2.GetMaxOutboundControlFrames() != nil, defaultH2MaxOutboundControlFrames),
		maxEmptyFrames:           orUint32(h2.GetMaxConsecutiveInboundFramesWithEmptyPayload().GetValue(), h2.GetMaxConsecutiveInboundFramesWithEmptyPayload() != nil, defaultH2MaxEmptyFrames),
		maxPriorityPerStream:     orUint32(h2.GetMaxInboundPriorityFramesPerStream().GetValue(), h2.GetMaxInboundPriorityFramesPerStream() != nil, defaultH2MaxPriorityPerStream),
		maxWindowUpdatePerData:   orUint32(h2.GetMaxInboundWindowUpdateFramesPerDataFrameSent().GetValue(), h2.GetMaxInboundWindowUpdateFramesPerDataFrameSent() != nil, defaultH2MaxWindowUpdatePerData),
	}
	s.allowConnect = h2.GetAllowConnect()
	s.hpackTableSize = orUint32(h2.GetHpackTableSize().GetValue(), h2.GetHpackTableSize() != nil, defaultHPACKTableSize)
	s.noHuffman = h2.GetEnableHuffmanEncoding() != nil && !h2.GetEnableHuffmanEncoding().GetValue()
	s.maxFieldWireBytes = int(h2.GetMaxHeaderFieldSizeKb().GetValue()) << 10
	s.customSettings = customSettings(h2)
	s.disallowObsText = h2.GetDisallowObsText().GetValue()
	s.resetBurst, s.resetRate = defaultH2ResetBurst, defaultH2ResetRate
	if v := h2.GetStreamResetBurst(); v != nil {
		s.resetBurst = v.GetValue()
	}
	if v := h2.GetStreamResetRate(); v != nil {
		s.resetRate = v.GetValue()
	}
	s.keepalive = readKeepalive(h2.GetConnectionKeepalive())
	// The override wins over the connection manager's
	// stream_error_on_invalid_http_message, which wins over the older
	// field, as in Envoy.
	//lint:ignore SA1019 the deprecated field still configures the behaviour when neither is set
	s.streamErrorOnInvalid = h2.GetStreamErrorOnInvalidHttpMessaging()
	if v := cfg.GetStreamErrorOnInvalidHttpMessage(); v != nil {
		s.streamErrorOnInvalid = v.GetValue()
	}
	if v := h2.GetOverrideStreamErrorOnInvalidHttpMessage(); v != nil {
		s.streamErrorOnInvalid = v.GetValue()
	}
	return s
}

// orUint32 returns v when it was set, else def.
func orUint32(v uint32, set bool, def uint32) uint32 {
	if set {
		return v
	}
	return def
}

// connBufferLimit is how much output an HTTP/2 connection queues for its
// client before streams wait: the listener's per-connection buffer limit
// when the connection carries one, else Envoy's default of 1 MiB.
func connBufferLimit(nc net.Conn) int {
	if bl, ok := nc.(interface{ BufferLimit() uint32 }); ok && bl.BufferLimit() > 0 {
		return int(bl.BufferLimit())
	}
	return 1 << 20
}
