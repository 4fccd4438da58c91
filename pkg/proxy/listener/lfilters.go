package listener

import (
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// runListenerFilters runs the listener filters on a reserved connection,
// on its own goroutine, then hands it to its filter chain, as Envoy's
// active socket does: listener_filters_timeout bounds them all together
// (downstream_pre_cx_timeout), after which the connection is closed, or
// with continue_on_listener_filters_timeout goes on to its filter chain
// as it is; the peer's close (downstream_listener_filter_remote_close) and
// a read error (downstream_listener_filter_error) close it, as does a
// filter that rejects it. downstream_pre_cx_active counts the connections
// in the filters.
//
// sock is nil for a new connection; a connection handed off by a
// use_original_dst listener keeps the addresses that listener's filters
// restored.
func (l *Listener) runListenerFilters(c net.Conn, ws *workerStats, sock *listenerfilter.Socket) {
	l.stats.preCxActive.Inc()
	if sock == nil {
		sock = listenerfilter.NewSocket(c)
		if l.logs != nil {
			sock.SetAcceptTime(l.now())
		}
	}
	if l.lfTimeout > 0 {
		_ = c.SetReadDeadline(time.Now().Add(l.lfTimeout))
	}
	var err error
	for _, f := range l.lfilters {
		if err = f.OnAccept(sock); err != nil {
			break
		}
	}
	l.stats.preCxActive.Dec()
	if err != nil && !l.listenerFilterFailed(err) {
		l.unreserve()
		if l.logs != nil {
			l.logUnserved(c, sock, l.acceptedAt(sock, l.now()), 0, "")
		}
		l.refuse(c, "listener filter: "+err.Error())
		return
	}
	if l.lfTimeout > 0 {
		_ = c.SetReadDeadline(time.Time{})
	}
	if l.handOff(c, sock, ws) {
		return
	}
	if conn, ch := l.admit(c, ws, sock); conn != nil {
		l.serve(conn, ch)
	}
}

// listenerFilterFailed counts a listener filter's failure and reports
// whether the connection goes on to its filter chain nonetheless (a
// timeout with continue_on_listener_filters_timeout).
func (l *Listener) listenerFilterFailed(err error) bool {
	var re *listenerfilter.ReadError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		l.stats.preCxTimeout.Inc()
		return l.lfContinue
	case errors.Is(err, io.EOF):
		l.stats.lfRemoteClose.Inc()
	case errors.As(err, &re):
		l.stats.lfError.Inc()
	}
	return false
}
