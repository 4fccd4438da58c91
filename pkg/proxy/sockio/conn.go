// Package sockio reads and writes a plain TCP socket as its net.TCPConn
// does (the same waits in the netpoller, the same deadlines, results and
// errors), but makes each read and write as a raw system call, one that
// does not tell Go's scheduler that the thread is in the kernel.
//
// Why. A socket of Go's net package is non-blocking: its read or write
// returns at once, with EAGAIN when it would wait, and the waiting is the
// netpoller's. Still, net makes the call as a blocking one would be
// (entersyscall and exitsyscall around it), and entering a system call
// wakes the runtime's monitor thread (sysmon) whenever it was asleep:
// sysmon sleeps while every P is idle, which for a proxy serving one
// connection at a time is between any two of its waits. So each request
// of a lone keep-alive connection woke sysmon once or twice (a futex
// wake-up), and sysmon then polled every 20 µs until the process was idle
// again: a futex call and three or four 20 µs sleeps per request, about
// four of the six context switches the proxy's threads made per request
// (BENCHMARKS.md, session 26). A raw call leaves sysmon asleep; since the
// call cannot block, nothing is lost by not handing the P over meanwhile.
// The tcp_proxy filter's event loop makes its reads and writes the same
// way.
//
// What sysmon asleep gives up: it is what preempts a goroutine running
// for more than 10 ms. It still wakes at the process's next timer (the
// HTTP connection manager's idle sweep runs every 250 ms while
// connections are served, and every socket deadline is a timer) and at
// any system call made the ordinary way, and stays awake while any P
// runs; so a request whose handling runs long on a proxy that was wholly
// idle before it may be preempted up to about a sweep period late rather
// than after 10 ms.
//
// The netpoller, deadlines and closing work as for the net.Conn: each
// operation goes through the socket's RawConn, which holds the
// descriptor's read or write lock (a concurrent Close waits for it, and
// the descriptor cannot be reused meanwhile), fails at once when the
// deadline has passed or the socket is closed, and waits in the netpoller
// when the call finds nothing to read or no room to write.
package sockio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// maxRW is the largest read or write made in one call, as Go's poller
// caps them (1 GiB).
const maxRW = 1 << 30

// maxVec is the most pieces one writev takes, as Go's poller caps them.
const maxVec = 1024

// Conn reads and writes one TCP socket with raw system calls. Read and
// Write may be called from different goroutines at once, as on the
// net.Conn; calls of the same kind are serialised.
type Conn struct {
	tcp *net.TCPConn
	raw syscall.RawConn
	// network names the socket's network in errors, as net.OpError's
	// Net (the socket's own is not visible outside net).
	network string

	rmu    sync.Mutex
	rp     []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool

	wmu      sync.Mutex
	wp       []byte
	wn       int
	werr     error
	writeFn  func(fd uintptr) bool
	wv       *[][]byte
	wvn      int64
	iov      []syscall.Iovec
	writevFn func(fd uintptr) bool
}

// New returns a Conn for tcp, naming network in its errors (what tcp was
// dialled or listened with: "tcp", "tcp4", "tcp6"); nil when tcp gives no
// RawConn.
func New(tcp *net.TCPConn, network string) *Conn {
	raw, err := tcp.SyscallConn()
	if err != nil {
		return nil
	}
	c := &Conn{tcp: tcp, raw: raw, network: network}
	c.readFn = c.readOnce
	c.writeFn = c.writeAll
	c.writevFn = c.writevAll
	return c
}

// Read reads into p as net.Conn's Read does: n > 0, or io.EOF at the end
// of the stream, or a *net.OpError (a deadline, a closed socket, a reset).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return c.tcp.Read(p)
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	c.rmu.Lock()
	c.rp, c.rn, c.rerr = p, 0, 0
	err := c.raw.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rp = nil
	c.rmu.Unlock()
	switch {
	case err != nil:
		return 0, c.opError("read", rawError(err))
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readOnce is RawConn.Read's function: one read, false when the socket
// has nothing yet (the netpoller then waits for it).
func (c *Conn) readOnce(fd uintptr) bool {
	n, e := RawIO(syscall.SYS_READ, fd, c.rp)
	switch e {
	case 0:
		c.rn = n
		return true
	case syscall.EAGAIN:
		return false
	default:
		c.rerr = e
		return true
	}
}

// Write writes all of p as net.Conn's Write does, waiting for room in
// the netpoller; it returns what was written and, when that is not all
// of p, why (a *net.OpError).
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return c.tcp.Write(p)
	}
	c.wmu.Lock()
	c.wp, c.wn, c.werr = p, 0, nil
	err := c.raw.Write(c.writeFn)
	n, werr := c.wn, c.werr
	c.wp, c.werr = nil, nil
	c.wmu.Unlock()
	if err != nil {
		return n, c.opError("write", rawError(err))
	}
	if werr != nil {
		return n, c.opError("write", werr)
	}
	return n, nil
}

// writeAll is RawConn.Write's function: it writes until all of wp is
// out or the socket is full (false: the netpoller waits for room, then
// calls it again), as poll.FD.Write loops.
func (c *Conn) writeAll(fd uintptr) bool {
	for {
		end := len(c.wp)
		if end-c.wn > maxRW {
			end = c.wn + maxRW
		}
		rest := c.wp[c.wn:end]
		n, e := RawIO(syscall.SYS_WRITE, fd, rest)
		c.wn += n
		switch {
		case c.wn == len(c.wp):
			return true
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			c.werr = os.NewSyscallError("write", e)
			return true
		case n == 0:
			c.werr = io.ErrUnexpectedEOF
			return true
		}
	}
}

// WriteBuffers writes v's pieces in as few writev calls as the socket
// takes, consuming v, as net.Buffers' WriteTo does on a TCP socket.
func (c *Conn) WriteBuffers(v *net.Buffers) (int64, error) {
	c.wmu.Lock()
	c.wv, c.wvn, c.werr = (*[][]byte)(v), 0, nil
	err := c.raw.Write(c.writevFn)
	n, werr := c.wvn, c.werr
	c.wv, c.werr = nil, nil
	c.wmu.Unlock()
	if err != nil {
		return n, c.opError("writev", rawError(err))
	}
	if werr != nil {
		return n, c.opError("writev", werr)
	}
	return n, nil
}

// writevAll is RawConn.Write's function for WriteBuffers, as
// poll.FD.Writev loops: empty pieces are skipped, at most maxVec pieces
// and maxRW bytes of one piece per call.
func (c *Conn) writevAll(fd uintptr) bool {
	v := c.wv
	for len(*v) > 0 {
		iov := c.iov[:0]
		for _, chunk := range *v {
			if len(chunk) == 0 {
				continue
			}
			iov = append(iov, syscall.Iovec{Base: &chunk[0]})
			if len(chunk) > maxRW {
				iov[len(iov)-1].SetLen(maxRW)
				break
			}
			iov[len(iov)-1].SetLen(len(chunk))
			if len(iov) == maxVec {
				break
			}
		}
		c.iov = iov
		if len(iov) == 0 {
			return true
		}
		wrote, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		clear(iov)
		if e != 0 {
			wrote = 0
		}
		c.wvn += int64(wrote)
		consume(v, int64(wrote))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			c.werr = os.NewSyscallError("writev", e)
			return true
		case c.wvn == 0:
			c.werr = io.ErrUnexpectedEOF
			return true
		}
	}
	return true
}

// consume drops the first n bytes of v, as net.Buffers does.
func consume(v *[][]byte, n int64) {
	for len(*v) > 0 {
		ln0 := int64(len((*v)[0]))
		if ln0 > n {
			(*v)[0] = (*v)[0][n:]
			return
		}
		n -= ln0
		(*v)[0] = nil
		*v = (*v)[1:]
	}
}

// rawError is the error RawConn's wait met (a deadline, a closed socket),
// without the "raw-read" or "raw-write" wrapping, as the net.Conn's
// operation would have met it.
func rawError(err error) error {
	if oe, ok := err.(*net.OpError); ok {
		return oe.Err
	}
	return err
}

// opError wraps err as net.Conn's operations do.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.network, Source: c.tcp.LocalAddr(), Addr: c.tcp.RemoteAddr(), Err: err}
}
