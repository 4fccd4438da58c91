package httpconn

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// requestSpliceEnds returns the sockets the rest of an HTTP/1 request
// body may be spliced between, and how much to move at once, or nil
// when it may not: as for a response (see spliceEnds), both ends must be
// plain TCP, and the body must be the client's own Content-Length body as
// the connection reads it, which no filter, retry, mirror or hedge reads
// or keeps (each of those replaces s.body).
func (s *stream) requestSpliceEnds(uc *upstream.Conn) (down, up *net.TCPConn, piece int64) {
	c := s.conn
	if !spliceSupported || c == nil || c.x == nil || s.reqChunked || s.reqLength < spliceMin || s.body != bodySource(&c.x.body) {
		return nil, nil, 0
	}
	down, up = plainTCP(c.nc), plainTCP(uc.Conn)
	if down == nil || up == nil {
		return nil, nil, 0
	}
	return down, up, s.splicePiece()
}

// splicePiece is how much one splice moves: splicePiece, or the
// listener's buffer limit when that is smaller.
func (s *stream) splicePiece() int64 {
	piece := int64(splicePiece)
	if bl, ok := s.conn.nc.(interface{ BufferLimit() uint32 }); ok && bl.BufferLimit() > 0 {
		piece = min(piece, max(int64(bl.BufferLimit()), spliceMin))
	}
	return piece
}

// spliceRequest moves the rest of the request body, none of it buffered,
// from the client's socket to the upstream's in pieces, once what o
// gathered (the head, the body's first bytes) has gone out. It counts
// the bytes as the copy does (the access log's bytes received,
// downstream_cx_rx_bytes_total, the cluster's upstream_cx_tx_bytes_total)
// and pushes back the idle deadlines of both sides between pieces. On
// failure, downstreamSide tells a failed client (whose error
// requestBodyFailed answers) from a failed upstream, as sendRequestBody's.
func (s *stream) spliceRequest(o *outBuf, tm *upstreamTimer, uc *upstream.Conn, down, up *net.TCPConn, piece int64) (err error, downstreamSide bool) {
	if err := o.flush(); err != nil {
		return err, false
	}
	// The body goes to the same peer around the buffer.
	o.wrote = true
	body := &s.conn.x.body
	// The spliced bytes bypass both counting connections.
	var upTx *stats.Counter
	if bc, ok := uc.Conn.(byteCounted); ok {
		_, upTx = bc.ByteCounters()
	}
	lr := &s.up.lr
	for rest := body.Unbuffered(); rest > 0; rest = body.Unbuffered() {
		now := time.Now()
		s.down.touch(now)
		if tm.stale(now) {
			_ = uc.SetDeadline(tm.deadline(now))
		}
		// The reader lives in the scratch space: handed to ReadFrom as
		// an interface, a local one would be allocated.
		*lr = io.LimitedReader{R: down, N: min(rest, piece)}
		n, err := up.ReadFrom(lr)
		lr.R = nil
		if n > 0 {
			body.Consume(n)
			s.bytesRecv += uint64(n)
			s.logRecv()
			s.m.stats.cxRxBytes.Add(uint64(n))
			if upTx != nil {
				upTx.Add(uint64(n))
			}
		}
		if err == nil && n == 0 {
			// The client closed before the body's end.
			err = http1.ErrTruncatedBody
		}
		if err != nil {
			return err, s.spliceRequestClientFailed(err, tm, down)
		}
	}
	return nil, false
}

// spliceRequestClientFailed tells which side broke a request body's
// splice, whose error does not say: a body cut short is the client's, a
// broken pipe can only be the upstream's write, a deadline is the side's
// whose deadline passed (both: the upstream's if the client's bytes wait
// unread, as the upstream stopped taking them), and anything else is the
// client's if its socket shows it gone.
func (s *stream) spliceRequestClientFailed(err error, tm *upstreamTimer, down *net.TCPConn) bool {
	switch {
	case errors.Is(err, http1.ErrTruncatedBody):
		return true
	case isTimeoutErr(err):
		now := time.Now()
		upPassed := !tm.at.IsZero() && !now.Before(tm.at)
		rd := &s.conn.rd
		downPassed := rd.set && !rd.at.IsZero() && !now.Before(rd.at)
		if upPassed && downPassed {
			return !inputPending(down)
		}
		return !upPassed
	case errors.Is(err, syscall.EPIPE):
		return false
	}
	return peerGone(down)
}
