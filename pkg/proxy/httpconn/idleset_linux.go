//go:build linux

package httpconn

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/epoll"
)

// idleSetSupported: connections move to the idle set on this platform.
const idleSetSupported = true

// idleSet holds the HTTP/1 connections idle for a while, with no
// goroutine of their own (see idleset.go): their sockets are in an epoll
// set (level-triggered, for reading and the peer's close), and one
// goroutine waits for the set itself through Go's netpoller (the set is
// readable when one of them is), as the tcp_proxy event loop does. The
// set and its goroutine exist while it holds connections: the last one
// to leave closes it.
//
// The sockets stay registered in Go's own netpoller too (a descriptor may
// be in several epoll sets); the set reaches a descriptor only under its
// connection's reference (RawConn.Control), and only the set removes a
// connection's registration, so a descriptor closed and reused elsewhere
// is never taken for another. A connection closed while in the set (only
// Shutdown's cut does, after Close took every connection out) leaves the
// kernel's set by itself.
type idleSet struct {
	mu sync.Mutex
	p  *idlePoller
	// slots are the connections in the set, by epoll data; gen tells a
	// slot's successive connections apart.
	slots []*serverConn
	free  []int32
	gen   uint32
	count int
}

// idlePoller is an idle set's epoll set and what its goroutine uses.
type idlePoller struct {
	set *epoll.Set
	// ready are the connections of the events handled, to resume.
	ready []*serverConn
}

func newIdlePoller() (*idlePoller, error) {
	set, err := epoll.New("idle connections epoll", 64, nil)
	if err != nil {
		return nil, err
	}
	return &idlePoller{set: set}, nil
}

// add puts c, which waits for its next request with its buffers given
// back, in the set, and arms its timer for d (zero: none); it reports
// false when the set cannot take it (the connection then waits on its own
// goroutine). Once it returns true, c belongs to the set. c's lock is
// held.
func (s *idleSet) add(c *serverConn, d time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		p, err := newIdlePoller()
		if err != nil {
			c.m.log.V(1).Info("idle connections stay on their goroutines", "error", err.Error())
			return false
		}
		s.p = p
		go s.run(p)
	}
	var slot int32
	if n := len(s.free); n > 0 {
		slot = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		slot = int32(len(s.slots))
		s.slots = append(s.slots, nil)
	}
	s.gen++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: slot, Pad: int32(s.gen)}
	var err error
	if cerr := c.park.raw.Control(func(fd uintptr) {
		err = s.p.set.Ctl(unix.EPOLL_CTL_ADD, int(fd), &ev)
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		s.free = append(s.free, slot)
		s.closeIfEmpty()
		return false
	}
	s.slots[slot] = c
	c.inIdleSet, c.idleSlot, c.idleGen = true, slot, s.gen
	s.count++
	if !d.IsZero() {
		if c.idleTimer == nil {
			c.idleTimer = time.AfterFunc(time.Until(d), c.idleTimeUp)
		} else {
			c.idleTimer.Reset(time.Until(d))
		}
	}
	return true
}

// idleTimeUp resumes a connection in the set whose idle timeout or
// maximum duration is due: its goroutine ends it.
func (c *serverConn) idleTimeUp() {
	if c.m.idlers.take(c) {
		go c.resume()
	}
}

// take removes c from the set and reports whether it was there; the
// caller then resumes it.
func (s *idleSet) take(c *serverConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.inIdleSet {
		return false
	}
	s.removeLocked(c)
	s.closeIfEmpty()
	return true
}

// removeLocked takes c out of the set.
func (s *idleSet) removeLocked(c *serverConn) {
	// A socket closed meanwhile has left the kernel's set already.
	_ = c.park.raw.Control(func(fd uintptr) {
		_ = s.p.set.Ctl(unix.EPOLL_CTL_DEL, int(fd), nil)
	})
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.inIdleSet = false
	s.slots[c.idleSlot] = nil
	s.free = append(s.free, c.idleSlot)
	s.count--
}

// closeIfEmpty closes the epoll set once no connection is left in it; its
// goroutine then ends.
func (s *idleSet) closeIfEmpty() {
	if s.count > 0 || s.p == nil {
		return
	}
	_ = s.p.set.Close()
	s.p = nil
}

// run is the set's goroutine: it resumes the connections whose sockets
// become readable (a request, or the client's close) until the set is
// closed.
func (s *idleSet) run(p *idlePoller) {
	for {
		evs, err := p.set.Wait()
		s.mu.Lock()
		if s.p != p {
			// Closed: the set emptied.
			s.mu.Unlock()
			return
		}
		if err != nil {
			// Cannot happen while the set is open; its connections
			// must not wait for a goroutine that is gone.
			for _, c := range s.slots {
				if c != nil {
					s.removeLocked(c)
					p.ready = append(p.ready, c)
				}
			}
			s.closeIfEmpty()
			s.mu.Unlock()
			if len(p.ready) > 0 {
				p.ready[0].m.log.Error(err, "idle connection set stopped; its connections are resumed")
			}
			p.resumeReady()
			return
		}
		for _, ev := range evs {
			if int(ev.Fd) >= len(s.slots) {
				continue
			}
			c := s.slots[ev.Fd]
			if c == nil || c.idleGen != uint32(ev.Pad) {
				continue // left the set since
			}
			s.removeLocked(c)
			p.ready = append(p.ready, c)
		}
		s.closeIfEmpty()
		s.mu.Unlock()
		p.resumeReady()
	}
}

// resumeReady starts a goroutine for each connection taken from the set.
func (p *idlePoller) resumeReady() {
	for i, c := range p.ready {
		go c.resume()
		p.ready[i] = nil
	}
	p.ready = p.ready[:0]
}
