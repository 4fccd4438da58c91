package httpconn

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// tunnelBufSize bounds what one direction of a tunnel holds at a time: a
// tunnel reads a piece, writes it, then reads the next, so a slow reader
// on one side stops reads on the other (back-pressure), as Envoy's
// watermarks do.
const tunnelBufSize = 32 << 10

// tunnelEnd is one side of a tunnel: r reads what the peer sends (a
// buffered reader that may hold bytes read past the HTTP head), w writes
// to it, and conn carries the deadlines, the half-close and the close.
type tunnelEnd struct {
	r    io.Reader
	w    io.Writer
	conn tunnelConn
}

// tunnelConn is what a tunnel needs of a side's transport: a TCP
// connection, or an HTTP/2 stream (h2TunnelSide).
type tunnelConn interface {
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	Close() error
}

// tunnel relays bytes both ways between two connections once a request
// was upgraded (101) or a CONNECT established, until both directions
// ended. An end of stream (EOF) in one direction half-closes the other
// side's writes and the other direction goes on; any other error, or no
// byte in either direction for the idle timeout, closes both. Idle is
// measured across both directions, as Envoy's stream idle timer is reset
// by data either way.
type tunnel struct {
	idle time.Duration
	// hard, when set, ends the tunnel whatever its activity: the
	// connection manager's request_timeout, which Envoy disarms only at
	// the request's end, and a tunnel's request ends with the tunnel.
	hard time.Time
	// hardExpired is set when hard ended the tunnel.
	hardExpired atomic.Bool
	// last is the time of the latest activity, in nanoseconds since the
	// Unix epoch.
	last atomic.Int64
	// idled is set when the idle timeout ended the tunnel.
	idled atomic.Bool
	once  sync.Once
	down  tunnelEnd
	up    tunnelEnd
	// recvd and sentd, when set, count the bytes of each direction as
	// they move (the periodic access log's counts).
	recvd, sentd *atomic.Uint64
}

// run relays until both directions end, and returns the bytes received
// from downstream (and sent upstream) and those sent downstream. The
// caller closes both connections afterwards.
func (t *tunnel) run() (recv, sent uint64) {
	t.last.Store(time.Now().UnixNano())
	done := make(chan uint64, 1)
	go func() { done <- t.copy(t.down, t.up, t.sentd) }()
	recv = t.copy(t.up, t.down, t.recvd)
	sent = <-done
	return recv, sent
}

// copy relays what src's peer sends to dst's peer, counting it: src is
// the side read from, dst the side written to. The naming follows data:
// copy(up, down) moves downstream bytes upstream. Each piece is added to
// counted too, when set.
func (t *tunnel) copy(dst, src tunnelEnd, counted *atomic.Uint64) uint64 {
	// One buffer per direction for the tunnel's life: tunnels are
	// long-lived, so recycling them would save little.
	buf := make([]byte, tunnelBufSize)
	if t.idle == 0 {
		// Writes then wait without limit, as Envoy's do: clear the
		// deadline the HTTP exchange left.
		_ = dst.conn.SetWriteDeadline(time.Time{})
	}
	var n uint64
	for {
		// Always set: the zero time clears a deadline left from the
		// HTTP exchange.
		_ = src.conn.SetReadDeadline(earliest(after(time.Now(), t.idle), t.hard))
		k, err := src.r.Read(buf)
		if k > 0 {
			now := time.Now()
			t.last.Store(now.UnixNano())
			if t.idle > 0 {
				_ = dst.conn.SetWriteDeadline(now.Add(t.idle))
			}
			if _, werr := dst.w.Write(buf[:k]); werr != nil {
				t.abort()
				return n
			}
			n += uint64(k)
			if counted != nil {
				counted.Add(uint64(k))
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			closeWrite(dst.conn)
			return n
		case isTimeout(err) && !t.hard.IsZero() && !time.Now().Before(t.hard):
			t.hardExpired.Store(true)
			t.abort()
			return n
		case isTimeout(err) && t.idle > 0 && time.Since(time.Unix(0, t.last.Load())) < t.idle:
			// The other direction was active meanwhile.
		default:
			if isTimeout(err) {
				t.idled.Store(true)
			}
			t.abort()
			return n
		}
	}
}

// abort ends both directions at once: the blocked reads fail.
func (t *tunnel) abort() {
	t.once.Do(func() {
		_ = t.down.conn.Close()
		_ = t.up.conn.Close()
	})
}

// closeWrite half-closes c's writes when it can; a connection that cannot
// is left open for the other direction to finish.
func closeWrite(c tunnelConn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
