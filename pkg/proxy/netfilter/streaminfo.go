package netfilter

import (
	"net"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// StreamInfo is what a network filter records about its connection for
// the listener's access logs. In Envoy tcp_proxy works on the
// connection's own stream info, so a listener log of a tcp_proxy
// connection shows its bytes, upstream and response flags; the HTTP
// connection manager keeps its own per request and leaves the
// connection's empty.
type StreamInfo interface {
	// ConnectionLogEntry describes the connection as the filter sees it
	// now; the listener fills in what it knows itself (times, addresses,
	// filter chain, TLS, type).
	ConnectionLogEntry() *accesslog.Entry
}

// streamInfoHolder is a connection whose listener logs it (a
// listener.Conn).
type streamInfoHolder interface {
	SetStreamInfo(StreamInfo) bool
	StreamInfoDone()
}

// SetStreamInfo gives c's listener the filter's StreamInfo and reports
// whether it took it: only a listener with access_log does. The
// listener then logs the connection's end only once the filter calls
// StreamInfoDone, so that the entry has the filter's final account even
// when another goroutine closes the connection.
func SetStreamInfo(c net.Conn, si StreamInfo) bool {
	h, ok := c.(streamInfoHolder)
	return ok && h.SetStreamInfo(si)
}

// StreamInfoDone tells c's listener that the filter that gave its
// StreamInfo (SetStreamInfo returned true) is done with it.
func StreamInfoDone(c net.Conn) {
	if h, ok := c.(streamInfoHolder); ok {
		h.StreamInfoDone()
	}
}
