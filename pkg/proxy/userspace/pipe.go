package userspace

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// DefaultBufferSize is the buffer of each direction when the bootstrap's
// internal_listener extension leaves buffer_size_kb unset: 1024 KiB, as
// in Envoy.
const DefaultBufferSize = 1024 * 1024

// Pipe returns the two ends of a new internal connection: client is the
// end an upstream connection holds, server the end the internal listener
// accepts. Each direction buffers at most size bytes (below 1 means
// DefaultBufferSize); a writer waits while its peer's buffer is full.
// server's local address is to (the listener's), its remote address the
// client's.
func Pipe(size int, to Addr) (client, server *Conn) {
	if size < 1 {
		size = DefaultBufferSize
	}
	up, down := newHalf(size), newHalf(size)
	from := Addr{Listener: ClientListener}
	client = &Conn{rx: down, tx: up, local: from, remote: to}
	server = &Conn{rx: up, tx: down, local: to, remote: from}
	client.init()
	server.init()
	return client, server
}

// half is one direction of a connection: the bytes written and not yet
// read, at most limit of them.
type half struct {
	mu    sync.Mutex
	buf   []byte
	off   int // buf[off:] is unread
	limit int
	// eof: the writer is done (CloseWrite or Close); the reader gets
	// io.EOF once buf is drained. gone: the reader closed; writes fail.
	eof, gone bool
	// changed is closed, and replaced, on every change, waking waiters.
	changed chan struct{}
}

func newHalf(limit int) *half {
	return &half{limit: limit, changed: make(chan struct{})}
}

// signal wakes the waiters of h. h.mu is held.
func (h *half) signal() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// unread is how many bytes wait. h.mu is held.
func (h *half) unread() int { return len(h.buf) - h.off }

// Conn is one end of an internal connection.
type Conn struct {
	rx, tx        *half
	local, remote net.Addr
	// passthrough is the metadata the upstream side passed on (see
	// SetPassthroughMetadata), set before the connection is accepted.
	passthrough *corev3.Metadata

	// mu guards the deadlines and closed; dlChanged is closed, and
	// replaced, when a deadline changes, so that waiters look again.
	mu              sync.Mutex
	readDL, writeDL time.Time
	dlChanged       chan struct{}
	closed          bool
	closedCh        chan struct{}
}

func (c *Conn) init() {
	c.dlChanged = make(chan struct{})
	c.closedCh = make(chan struct{})
}

// errPeerGone is what a write gets once the peer closed: a broken pipe,
// as on a socket.
var errPeerGone = syscall.EPIPE

// isClosed reports whether Close has run.
func (c *Conn) isClosed() bool {
	select {
	case <-c.closedCh:
		return true
	default:
		return false
	}
}

// expired reports whether the read (or write) deadline has passed: the
// operation then fails at once, as on a socket, even with data or room.
func (c *Conn) expired(read bool) bool {
	c.mu.Lock()
	dl := c.writeDL
	if read {
		dl = c.readDL
	}
	c.mu.Unlock()
	return !dl.IsZero() && !time.Now().Before(dl)
}

// opError wraps err as the net package's errors are.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: Network, Source: c.local, Addr: c.remote, Err: err}
}

// wait blocks until ch is closed, the deadline read by dl passes or the
// connection is closed. It returns os.ErrDeadlineExceeded or
// net.ErrClosed when waiting must end, nil to look again.
func (c *Conn) wait(ch <-chan struct{}, read bool) error {
	c.mu.Lock()
	dl, dlCh, closed := c.writeDL, c.dlChanged, c.closed
	if read {
		dl = c.readDL
	}
	c.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	var timeout <-chan time.Time
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
	case <-dlCh:
	case <-c.closedCh:
		return net.ErrClosed
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
	return nil
}

// Read reads what the peer wrote, waiting for some; io.EOF once the peer
// closed its write side and everything before was read.
func (c *Conn) Read(p []byte) (int, error) {
	if c.isClosed() {
		return 0, c.opError("read", net.ErrClosed)
	}
	if c.expired(true) {
		return 0, c.opError("read", os.ErrDeadlineExceeded)
	}
	h := c.rx
	for {
		h.mu.Lock()
		if n := h.unread(); n > 0 || len(p) == 0 {
			n = copy(p, h.buf[h.off:])
			h.off += n
			if h.off == len(h.buf) {
				h.buf, h.off = h.buf[:0], 0
			}
			h.signal() // room for the writer
			h.mu.Unlock()
			return n, nil
		}
		if h.eof {
			h.mu.Unlock()
			return 0, io.EOF
		}
		ch := h.changed
		h.mu.Unlock()
		if err := c.wait(ch, true); err != nil {
			return 0, c.opError("read", err)
		}
	}
}

// Peek copies what waits to be read into buf without reading it, waiting
// until at least want bytes are there (or buf is full): the listener
// filters' peek. It returns io.EOF when the peer's write side closed
// before want bytes came, os.ErrDeadlineExceeded at the read deadline.
func (c *Conn) Peek(buf []byte, want int) (int, error) {
	want = min(max(want, 1), len(buf))
	h := c.rx
	for {
		h.mu.Lock()
		if n := h.unread(); n >= want {
			n = copy(buf, h.buf[h.off:])
			h.mu.Unlock()
			return n, nil
		}
		if h.eof {
			h.mu.Unlock()
			return 0, io.EOF
		}
		ch := h.changed
		h.mu.Unlock()
		if err := c.wait(ch, true); err != nil {
			return 0, err
		}
	}
}

// Write writes p to the peer, waiting while the peer's buffer is full.
// It fails with a broken pipe once the peer closed, and after CloseWrite.
func (c *Conn) Write(p []byte) (int, error) {
	if c.isClosed() {
		return 0, c.opError("write", net.ErrClosed)
	}
	if c.expired(false) {
		return 0, c.opError("write", os.ErrDeadlineExceeded)
	}
	h := c.tx
	written := 0
	for {
		h.mu.Lock()
		switch {
		case h.gone:
			h.mu.Unlock()
			return written, c.opError("write", errPeerGone)
		case h.eof:
			// After CloseWrite, as a socket after shutdown(SHUT_WR).
			h.mu.Unlock()
			return written, c.opError("write", errPeerGone)
		}
		if room := h.limit - h.unread(); room > 0 && len(p) > 0 {
			n := min(room, len(p))
			if h.off > 0 && len(h.buf)+n > cap(h.buf) {
				// Reuse the space already read before growing.
				h.buf = h.buf[:copy(h.buf, h.buf[h.off:])]
				h.off = 0
			}
			h.buf = append(h.buf, p[:n]...)
			p = p[n:]
			written += n
			h.signal()
		}
		if len(p) == 0 {
			h.mu.Unlock()
			return written, nil
		}
		ch := h.changed
		h.mu.Unlock()
		if err := c.wait(ch, false); err != nil {
			return written, c.opError("write", err)
		}
	}
}

// CloseWrite ends the connection's write side: the peer reads what was
// written, then io.EOF. Reading goes on.
func (c *Conn) CloseWrite() error {
	h := c.tx
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.eof {
		h.eof = true
		h.signal()
	}
	return nil
}

// Close ends both directions: the peer reads what was written, then
// io.EOF, and its writes fail; what the peer wrote and was not read is
// dropped. Reads and writes waiting on c return net.ErrClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	c.closed = true
	close(c.closedCh)
	c.mu.Unlock()
	_ = c.CloseWrite()
	h := c.rx
	h.mu.Lock()
	h.gone = true
	h.buf, h.off = nil, 0
	h.signal()
	h.mu.Unlock()
	return nil
}

// LocalAddr returns the end's own address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.setDeadlines(t, true, true)
	return nil
}

// SetReadDeadline sets the read deadline (Read and Peek).
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.setDeadlines(t, true, false)
	return nil
}

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.setDeadlines(t, false, true)
	return nil
}

func (c *Conn) setDeadlines(t time.Time, read, write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if read {
		c.readDL = t
	}
	if write {
		c.writeDL = t
	}
	close(c.dlChanged)
	c.dlChanged = make(chan struct{})
}

// IsPeerGone reports whether err is the error of a write after the peer
// closed.
func IsPeerGone(err error) bool { return errors.Is(err, errPeerGone) }
