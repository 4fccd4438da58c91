//go:build linux && !tcpproxy_goroutines

package tcpproxy

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/sockio"
)

// smallRead: a direction whose read is this small, and taken whole by
// its receiver, gives its own buffer back (see relaySide.own).
const smallRead = 4 << 10

// sideErrs are the errors a failing side ends its session with.
var sideErrs = [2]error{errDownstream, errUpstream}

// relayOnLoop relays a plain TCP connection on one of the proxy's event
// loops and reports whether it did; it returns once both directions have
// ended. Tunnels, check_drain_close and wrapped sockets (TLS) take the
// goroutine relay, and so does a connection that turns to bulk transfer
// (h says where the loop left it).
func (s *session) relayOnLoop(h *handoff) bool {
	if s.p.cfg.tunnel != nil || s.p.cfg.checkDrainClose {
		// check_drain_close asks after each read and write, which
		// the goroutine relay's pumps do.
		return false
	}
	down, ok := rawConn(s.down).(*net.TCPConn)
	if !ok {
		return false
	}
	up, ok := s.up.r.(*net.TCPConn)
	if !ok {
		return false
	}
	r := &relay{s: s, slot: -1, lim: maxChunk, done: make(chan struct{})}
	if bl, ok := s.down.(interface{ BufferLimit() uint32 }); ok && bl.BufferLimit() > 0 {
		// Each direction holds one buffer at most, within the
		// listener's per_connection_buffer_limit_bytes.
		r.lim = int(min(bl.BufferLimit(), maxChunk))
	}
	l := s.p.loops.get(s.p, s.id)
	if l == nil {
		return false
	}
	r.l = l
	for i, c := range [2]*net.TCPConn{down, up} {
		rc, err := c.SyscallConn()
		if err != nil {
			return false
		}
		r.side[i].init(r, i, rc)
	}
	s.mu.Lock()
	if s.closed {
		// Cut while connecting: the connections are closed.
		s.mu.Unlock()
		return true
	}
	s.relay = r
	s.mu.Unlock()
	if !l.post(func() { l.add(r) }) {
		// The loop is gone (it cannot be, short of a broken poller).
		s.mu.Lock()
		s.relay = nil
		s.mu.Unlock()
		return false
	}
	<-r.done
	if !r.handoff {
		return true
	}
	// The loop has let go of the connection for good.
	*h = handoff{
		upEnded:   !r.side[downSide].reading,
		downEnded: !r.side[upSide].reading,
		toUp:      r.side[upSide].pend,
		toDown:    r.side[downSide].pend,
	}
	for i := range r.side {
		if b := r.side[i].own; b != nil {
			h.bufs = append(h.bufs, b)
		}
	}
	return false
}

// kick tells the loop that the session's connections were closed from
// another goroutine (closeBoth).
func (r *relay) kick() {
	_ = r.l.post(func() { r.l.check1(r) })
}

// relay is a connection held by an event loop. Everything but done is
// the loop's own.
type relay struct {
	s    *session
	l    *evloop
	slot int32
	gen  uint32
	lim  int // bytes per read: the buffer limit, at most maxChunk
	side [2]relaySide
	// again: a read filled the buffer, so the loop reads it again after
	// the batch (an edge-triggered set reports no more until it is
	// drained).
	again bool
	// ended: the loop let go of the connection; handoff: to the
	// goroutine relay.
	ended, handoff bool
	done           chan struct{}
}

// relaySide is one connection of a relay. Its descriptor is in the loop's
// epoll set edge-triggered, once, for reading and writing; the loop keeps
// what the edges told (canRead, canWrite) until a system call says
// otherwise, so that the set never has to change while bytes flow.
type relaySide struct {
	rc syscall.RawConn
	// inSet: the descriptor is in the loop's epoll set.
	inSet bool
	// canRead: bytes (or the end of the stream, or an error) may be
	// waiting; canWrite: the socket may take bytes.
	canRead, canWrite bool
	// ending: the peer's end of stream (or an error) was reported; it
	// comes after the bytes before it, without another edge, so the side
	// is read until it shows.
	ending bool
	// reading: its bytes are still read (no end of stream, no failure).
	reading bool
	// pend holds bytes read from the other side that this one has not
	// taken yet (pendOff of them written); nil when there are none. They
	// are in own, a pooled buffer that the direction keeps while it
	// writes faster than this side takes (bulk transfers: reads go
	// straight to it, nothing is copied); other reads land in the loop's
	// buffer, and only what a write leaves is copied to own.
	pend    []byte
	own     *[]byte
	pendOff int

	// The system call in progress, for the callbacks bound once.
	p       []byte
	n       int
	err     error
	ctlOp   int
	ctlErr  error
	readFn  func(fd uintptr)
	writeFn func(fd uintptr)
	ctlFn   func(fd uintptr)
}

func (sd *relaySide) init(r *relay, i int, rc syscall.RawConn) {
	sd.rc = rc
	sd.readFn = func(fd uintptr) { sd.n, sd.err = rawIO(syscall.SYS_READ, fd, sd.p) }
	sd.writeFn = func(fd uintptr) { sd.n, sd.err = rawIO(syscall.SYS_WRITE, fd, sd.p) }
	sd.ctlFn = func(fd uintptr) { sd.ctlErr = r.l.ctl(r, i, int(fd), sd.ctlOp) }
}

// rawIO reads or writes p (not empty) on a non-blocking socket as a raw
// system call (see sockio): the loop keeps its P, and the runtime's
// monitor thread is neither woken nor given a P to hand to another
// thread.
func rawIO(trap, fd uintptr, p []byte) (int, error) {
	n, e := sockio.RawIO(trap, fd, p)
	if e != 0 {
		return 0, e
	}
	return n, nil
}

// read reads once into p: n > 0, or 0 and nil at the end of the stream,
// or an error (EAGAIN: nothing yet; another: the connection failed or
// was closed).
func (sd *relaySide) read(p []byte) (int, error) {
	sd.p = p
	err := sd.rc.Control(sd.readFn)
	sd.p = nil
	if err != nil {
		return 0, err
	}
	return sd.n, sd.err
}

// write writes what the socket takes of p, once; EAGAIN when it did not
// take all of it.
func (sd *relaySide) write(p []byte) (int, error) {
	sd.p = p
	err := sd.rc.Control(sd.writeFn)
	sd.p = nil
	if err != nil {
		return 0, err
	}
	if sd.err == nil && sd.n < len(p) {
		sd.err = syscall.EAGAIN // the send buffer is full
	}
	return sd.n, sd.err
}

// setCtl adds the side to the loop's set or takes it out, under its
// connection's reference.
func (sd *relaySide) setCtl(op int) error {
	sd.ctlOp = op
	if err := sd.rc.Control(sd.ctlFn); err != nil {
		return err
	}
	return sd.ctlErr
}

// pending reports whether bytes wait to be written to the side.
func (sd *relaySide) pending() bool { return sd.pend != nil }

// begin puts both sides in the loop's set.
func (r *relay) begin() {
	r.s.mu.Lock()
	closed := r.s.closed
	r.s.mu.Unlock()
	if closed {
		r.abort()
		return
	}
	r.touch()
	for i := range r.side {
		sd := &r.side[i]
		sd.reading = true
		if err := sd.setCtl(unix.EPOLL_CTL_ADD); err != nil {
			r.fail(i)
			return
		}
		sd.inSet = true
	}
}

// handle notes what the epoll set reported for side i and moves what can
// move.
func (r *relay) handle(i int, events uint32) {
	sd := &r.side[i]
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		sd.canRead = true
	}
	if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		sd.ending = true
	}
	if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		sd.canWrite = true
	}
	r.progress()
}

// progress writes what waits for a side that can take it, then reads
// each side that can be read and whose peer holds nothing of it: a
// direction holds one buffer at most, as the goroutine relay, and a slow
// receiver stops the reading of its sender.
func (r *relay) progress() {
	for j := range r.side {
		if sd := &r.side[j]; sd.pending() && sd.canWrite {
			r.flush(j)
			if r.ended {
				return
			}
		}
	}
	for i := range r.side {
		if sd := &r.side[i]; sd.reading && sd.canRead && !r.side[1-i].pending() {
			r.pump(i)
			if r.ended {
				return
			}
		}
	}
}

// pump reads side i once and writes what came to the other side; what
// the other side does not take waits there.
func (r *relay) pump(i int) {
	s, st := r.s, r.s.p.stats
	src, dst := &r.side[i], &r.side[1-i]
	buf := r.l.buf[:r.lim]
	if dst.own != nil {
		buf = (*dst.own)[:r.lim]
	}
	n, err := src.read(buf)
	switch {
	case n > 0:
		if n < len(buf) && !src.ending {
			// A stream socket fills a read from all it holds: this one
			// is drained, and the next bytes bring an edge.
			src.canRead = false
		} else if !r.again {
			r.again = true
			r.l.again = append(r.l.again, r)
		}
		s.heard(i, r.l.now.Sub(s.mono))
		if i == downSide {
			st.rxBytesTotal.Add(uint64(n))
			s.rx.Add(uint64(n))
		} else {
			s.up.bytes.read(n)
		}
		m, werr := dst.write(buf[:n])
		if i == upSide {
			st.txBytesTotal.Add(uint64(m))
			s.tx.Add(uint64(m))
		} else {
			s.up.bytes.written(m)
		}
		r.touch()
		if werr != nil && werr != syscall.EAGAIN {
			r.fail(1 - i)
			return
		}
		switch {
		case m < n:
			dst.canWrite = false
			r.hold(i, buf[m:n])
		case n < smallRead:
			r.dropBuf(1 - i) // the direction is not (or no longer) bulk
		}
		if n == maxChunk {
			r.handOff()
		}
	case err == syscall.EAGAIN:
		src.canRead = false
	case err == nil:
		// End of stream: forwarded as a half-close.
		src.reading = false
		if i == upSide {
			s.up.bytes.readEnded(nil)
		}
		var cerr error
		if i == downSide {
			cerr = s.up.closeWrite()
		} else {
			cerr = closeWrite(s.down)
		}
		if cerr != nil {
			r.fail(1 - i)
			return
		}
		r.endIfDone()
	default:
		if i == upSide {
			s.up.bytes.readEnded(err)
		}
		r.fail(i)
	}
}

// hold keeps the bytes that side 1-i did not take (read from side i).
func (r *relay) hold(i int, rest []byte) {
	s, st := r.s, r.s.p.stats
	dst := &r.side[1-i]
	if dst.own == nil {
		dst.own = r.s.p.bufs.Get().(*[]byte)
		dst.pend = (*dst.own)[:copy(*dst.own, rest)]
	} else {
		dst.pend = rest // already in own
	}
	dst.pendOff = 0
	if i == downSide {
		st.rxBuffered.Add(int64(len(rest)))
		s.up.bytes.buffer(len(rest))
		st.pausedReading.Inc()
		s.upWriting.Store(true)
	} else {
		st.txBuffered.Add(int64(len(rest)))
	}
}

// flush writes what waits for side j.
func (r *relay) flush(j int) {
	s, st := r.s, r.s.p.stats
	dst := &r.side[j]
	m, err := dst.write(dst.pend[dst.pendOff:])
	dst.pendOff += m
	if j == downSide {
		st.txBytesTotal.Add(uint64(m))
		s.tx.Add(uint64(m))
	} else {
		s.up.bytes.written(m)
	}
	if m > 0 {
		r.touch()
	}
	if err != nil && err != syscall.EAGAIN {
		r.fail(j)
		return
	}
	if dst.pendOff < len(dst.pend) {
		dst.canWrite = false
		return
	}
	r.release(j)
	if j == upSide {
		st.resumedReading.Inc()
		if s.flushing.Load() {
			// The downstream is gone; its last bytes are out.
			s.closeUp()
			r.end()
		}
	}
}

// dropBuf returns side j's own buffer to the pool.
func (r *relay) dropBuf(j int) {
	if sd := &r.side[j]; sd.own != nil {
		r.s.p.bufs.Put(sd.own)
		sd.own = nil
	}
}

// release forgets what waits for side j (written or not); the buffer
// stays with the direction.
func (r *relay) release(j int) {
	sd := &r.side[j]
	if sd.pend == nil {
		return
	}
	held := int64(len(sd.pend))
	sd.pend = nil
	if j == upSide {
		r.s.p.stats.rxBuffered.Add(-held)
		r.s.up.bytes.buffer(-int(held))
		r.s.upWriting.Store(false)
	} else {
		r.s.p.stats.txBuffered.Add(-held)
	}
}

// unwatch takes side i out of the epoll set, before its connection
// closes (a closed connection has left the set with its descriptor).
func (r *relay) unwatch(i int) {
	sd := &r.side[i]
	sd.reading = false
	if sd.inSet {
		_ = sd.setCtl(unix.EPOLL_CTL_DEL)
		sd.inSet = false
	}
}

// fail ends the connection after an error on side i, as the goroutine
// relay does (session.fail): when the downstream failed while its bytes
// wait for the upstream, the upstream stays until they are written.
func (r *relay) fail(i int) {
	if r.ended {
		return
	}
	s := r.s
	flush := i == downSide && r.side[upSide].pending() && !s.flushing.Load()
	r.unwatch(downSide)
	if !flush {
		r.unwatch(upSide)
	}
	s.fail(sideErrs[i])
	if flush && s.flushing.Load() {
		r.release(downSide)
		r.dropBuf(downSide)
		r.side[upSide].reading = false
		return
	}
	r.end()
}

// check ends the relay when its connections were closed by another
// goroutine: closeBoth (idle timeout, maximum duration, shutdown) closes
// both; anything else that closed one (a cluster going away) counts as
// that side failing.
func (r *relay) check() {
	if r.ended {
		return
	}
	r.s.mu.Lock()
	closed := r.s.closed
	r.s.mu.Unlock()
	if closed {
		r.abort()
		return
	}
	for i := range r.side {
		if i == downSide && r.s.flushing.Load() {
			continue // closed on purpose, the upstream flushing
		}
		if r.side[i].rc.Control(func(uintptr) {}) != nil {
			r.fail(i)
			return
		}
	}
}

// abort lets go of the connection at once (closed from elsewhere, or a
// panic): both sides close.
func (r *relay) abort() {
	if r.ended {
		return
	}
	r.unwatch(downSide)
	r.unwatch(upSide)
	r.s.closeDown()
	r.s.closeUp()
	r.end()
}

// handOff gives the connection to the goroutine relay: a read filled the
// largest buffer, so the connection carries a bulk transfer, which a
// goroutine per direction moves with less CPU per byte than the loop
// (measured in BENCHMARKS.md); the loop's gain is on small messages.
// What waits to be written goes along, out of the gauges the pumps
// count it in again.
func (r *relay) handOff() {
	reading := [2]bool{r.side[downSide].reading, r.side[upSide].reading}
	r.unwatch(downSide)
	r.unwatch(upSide)
	st := r.s.p.stats
	for j := range r.side {
		sd := &r.side[j]
		if sd.pend == nil {
			continue
		}
		if j == upSide {
			st.rxBuffered.Add(-int64(len(sd.pend)))
			r.s.up.bytes.buffer(-len(sd.pend))
			r.s.upWriting.Store(false)
		} else {
			st.txBuffered.Add(-int64(len(sd.pend)))
		}
		sd.pend = sd.pend[sd.pendOff:]
	}
	r.side[downSide].reading, r.side[upSide].reading = reading[0], reading[1]
	r.handoff = true
	r.end()
}

// endIfDone ends the relay once both directions have ended.
func (r *relay) endIfDone() {
	if !r.side[downSide].reading && !r.side[upSide].reading && !r.side[downSide].pending() && !r.side[upSide].pending() {
		r.end()
	}
}

// end lets go of the connection; the session finishes (closes what is
// left, logs) on its own goroutine.
func (r *relay) end() {
	if r.ended {
		return
	}
	if !r.handoff {
		r.unwatch(downSide)
		r.unwatch(upSide)
		r.release(downSide)
		r.release(upSide)
		r.dropBuf(downSide)
		r.dropBuf(upSide)
	}
	r.ended = true
	if r.slot >= 0 && r.l.slots[r.slot] == r {
		r.l.remove(r)
	}
	close(r.done)
}

// touch records activity for the idle timer, at the batch's time.
func (r *relay) touch() {
	if r.s.p.cfg.idleTimeout > 0 {
		r.s.lastActive.Store(int64(r.l.now.Sub(r.s.mono)))
	}
}
