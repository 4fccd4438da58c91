package httpconn

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// h2Stats are Envoy's HTTP/2 codec stats of downstream connections, rooted
// at "http2." and shared by every connection manager (Envoy's
// CodecStats). Like Envoy, a manager creates them with its first HTTP/2
// connection, so a proxy that never spoke HTTP/2 does not list them.
//
// Some stay at zero by construction: headers_cb_no_stream (a codec
// inconsistency Envoy counts), metadata_empty_frames (METADATA frames are
// not supported), keepalive_timeout (connection_keepalive is not
// supported), stream_refused_errors (a client-side event), the
// underscore counters (headers_with_underscores_action is not supported:
// such headers are allowed, as Envoy's default) and deferred_stream_close.
type h2Stats struct {
	goAwaySent                     *stats.Counter
	headerOverflow                 *stats.Counter
	keepaliveTimeout               *stats.Counter
	inboundEmptyFramesFlood        *stats.Counter
	inboundPriorityFramesFlood     *stats.Counter
	inboundWindowUpdateFramesFlood *stats.Counter
	outboundControlFlood           *stats.Counter
	outboundFlood                  *stats.Counter
	rxMessagingError               *stats.Counter
	rxReset                        *stats.Counter
	trailers                       *stats.Counter
	txFlushTimeout                 *stats.Counter
	txReset                        *stats.Counter

	streamsActive *stats.Gauge
	// The bytes and frames handed to the connections' writers and not
	// yet written to their sockets.
	pendingSendBytes            *stats.Gauge
	outboundFramesActive        *stats.Gauge
	outboundControlFramesActive *stats.Gauge
}

// newH2Stats creates the HTTP/2 codec stats in store.
func newH2Stats(store *stats.Store) *h2Stats {
	sc := store.Scope("http2.")
	for _, name := range []string{
		"dropped_headers_with_underscores",
		"headers_cb_no_stream",
		"metadata_empty_frames",
		"requests_rejected_with_underscores_in_headers",
		"stream_refused_errors",
	} {
		sc.Counter(name)
	}
	sc.Gauge("deferred_stream_close")
	return &h2Stats{
		goAwaySent:                     sc.Counter("goaway_sent"),
		headerOverflow:                 sc.Counter("header_overflow"),
		keepaliveTimeout:               sc.Counter("keepalive_timeout"),
		inboundEmptyFramesFlood:        sc.Counter("inbound_empty_frames_flood"),
		inboundPriorityFramesFlood:     sc.Counter("inbound_priority_frames_flood"),
		inboundWindowUpdateFramesFlood: sc.Counter("inbound_window_update_frames_flood"),
		outboundControlFlood:           sc.Counter("outbound_control_flood"),
		outboundFlood:                  sc.Counter("outbound_flood"),
		rxMessagingError:               sc.Counter("rx_messaging_error"),
		rxReset:                        sc.Counter("rx_reset"),
		trailers:                       sc.Counter("trailers"),
		txFlushTimeout:                 sc.Counter("tx_flush_timeout"),
		txReset:                        sc.Counter("tx_reset"),
		streamsActive:                  sc.Gauge("streams_active"),
		pendingSendBytes:               sc.Gauge("pending_send_bytes"),
		outboundFramesActive:           sc.Gauge("outbound_frames_active"),
		outboundControlFramesActive:    sc.Gauge("outbound_control_frames_active"),
	}
}
