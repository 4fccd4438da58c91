package httpconn

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// A response body of known length whose rest, once the bytes read with
// the head are sent, is at least spliceMin long moves from the upstream
// socket to the client's with splice(2) (net.TCPConn.ReadFrom), without
// passing through the proxy's memory, when both ends are plain TCP and
// nothing in the chain looks at the body (see spliceEnds). Smaller rests
// are cheaper copied: a splice costs a pipe and two system calls.
const spliceMin = 16 << 10

// splicePiece bounds what one splice moves before the idle deadlines of
// both sides are pushed back, as the copy does for each piece it writes,
// and before the listener's buffer limit, whichever is smaller.
const splicePiece = 256 << 10

// spliceEnds returns the sockets a response body may be spliced between
// and how much to move at once, or nil when it may not: off Linux, for
// a TLS or wrapped socket on either side (whose bytes are not the
// socket's), and for a response not written to an HTTP/1 connection
// as is (chunked for an HTTP/1.1 client of an unknown length, ended by
// the close, or rewritten by an encoding filter).
func (s *stream) spliceEnds(uc *upstream.Conn) (down, up *net.TCPConn, piece int64) {
	c := s.conn
	if !spliceSupported || c == nil || s.down != downstream(c) || c.chunked || c.aborted {
		return nil, nil, 0
	}
	down, up = plainTCP(c.nc), plainTCP(uc.Conn)
	if down == nil || up == nil {
		return nil, nil, 0
	}
	return down, up, s.splicePiece()
}

// plainTCP is nc's TCP socket when what is written to nc goes to the
// socket unchanged: nc itself, or the socket under a wrapper that only
// accounts for it (the listener's connection, the cluster's). A TLS
// connection, or anything else, is nil.
func plainTCP(nc net.Conn) *net.TCPConn {
	for range 2 {
		switch c := nc.(type) {
		case *net.TCPConn:
			return c
		case *tls.Conn:
			return nil
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// spliceResponse moves the rest of the response body, none of it
// buffered, from up to down in pieces, counting the bytes as the copy
// does (the access log's bytes sent, downstream_cx_tx_bytes_total) and
// pushing back the idle deadlines of both sides between pieces. It
// reports whether the body went through; on failure it has dealt with
// the stream as the copy would, telling a failed client from a failed
// upstream.
func (s *stream) spliceResponse(cl UpstreamCluster, uc *upstream.Conn, tm *upstreamTimer, down, up *net.TCPConn, piece int64) bool {
	u := s.up
	if err := s.down.flush(); err != nil {
		s.downstreamFailed()
		return false
	}
	// The spliced bytes bypass the cluster's connection, which counts
	// what is read through it: they count here in its
	// upstream_cx_rx_bytes_total.
	var upRx *stats.Counter
	if bc, ok := uc.Conn.(byteCounted); ok {
		upRx, _ = bc.ByteCounters()
	}
	for rest := u.body.Unbuffered(); rest > 0; rest = u.body.Unbuffered() {
		now := time.Now()
		if tm.stale(now) {
			_ = uc.SetDeadline(tm.deadline(now))
		}
		s.down.touch(now)
		// The reader lives in the scratch space: handed to ReadFrom as
		// an interface, a local one would be allocated.
		u.lr = io.LimitedReader{R: up, N: min(rest, piece)}
		n, err := down.ReadFrom(&u.lr)
		u.lr.R = nil
		if n > 0 {
			u.body.Consume(n)
			s.bytesSent += uint64(n)
			s.logSent()
			s.m.stats.cxTxBytes.Add(uint64(n))
			if upRx != nil {
				upRx.Add(uint64(n))
			}
		}
		if err == nil && n == 0 {
			// The upstream closed before the body's end.
			err = http1.ErrTruncatedBody
		}
		if err != nil {
			if s.spliceClientFailed(err, tm, down) {
				s.downstreamFailed()
			} else {
				s.responseBodyFailed(cl, err, tm)
			}
			return false
		}
	}
	return true
}

// byteCounted is an upstream connection that counts the bytes read and
// written through it (the cluster's), and gives its counters to those
// who move its bytes through the socket beneath.
type byteCounted interface {
	ByteCounters() (rx, tx *stats.Counter)
}

// spliceClientFailed tells which side broke a splice, whose error does
// not say: a deadline is the upstream's if its own has passed, a broken
// pipe can only be a write, a body cut short is the upstream's, and
// anything else is the client's if its socket shows it gone.
func (s *stream) spliceClientFailed(err error, tm *upstreamTimer, down *net.TCPConn) bool {
	switch {
	case errors.Is(err, http1.ErrTruncatedBody):
		return false
	case isTimeoutErr(err):
		return tm.at.IsZero() || time.Now().Before(tm.at)
	case errors.Is(err, syscall.EPIPE):
		return true
	}
	return peerGone(down)
}

// flushFailed reports whether writing to an HTTP/1 client failed: a body
// reader flushes the client's output before it waits for the upstream, so
// its error may be the client's.
func (s *stream) flushFailed() bool {
	return s.conn != nil && s.conn.x != nil && s.conn.x.out.err != nil
}

// readRest reads the rest of a Content-Length response body, none of it
// buffered, from the upstream connection straight into the HTTP/1
// client's output buffer, behind the head and the body's first bytes,
// when it fits there within gatherMax: one read instead of a flush, a
// read into the upstream buffer and a copy out of it, and the response
// leaves in one write. It reports whether it took the rest (done), and
// the upstream's error, if any, after counting what did arrive.
func (s *stream) readRest(uc *upstream.Conn) (done bool, err error) {
	u, c := s.up, s.conn
	rest := u.body.Unbuffered()
	if rest == 0 || c == nil || s.down != downstream(c) || c.chunked || c.aborted {
		return false, nil
	}
	o := &c.x.out
	n := len(o.b)
	if o.err != nil || int64(n)+rest > gatherMax {
		return false, nil
	}
	// The upstream buffer is empty: reading its connection directly
	// skips nothing.
	o.b = slices.Grow(o.b, int(rest))[:n+int(rest)]
	got, err := io.ReadFull(uc.Conn, o.b[n:])
	o.b = o.b[:n+got]
	u.body.Consume(int64(got))
	s.bytesSent += uint64(got)
	s.logSent()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = http1.ErrTruncatedBody
	}
	return true, err
}
