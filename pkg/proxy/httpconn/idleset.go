package httpconn

import (
	"runtime/debug"
	"time"
)

// idleSweepEvery is the period of the sweep that moves HTTP/1 connections
// idle for a whole period to the idle set: a connection moves after
// between one and two periods without a request.
const idleSweepEvery = 250 * time.Millisecond

// A burst of at least releaseAfterMoves connections moved to the idle set
// returns the memory it leaves behind, at most once per releaseEvery (see
// releaseAfterBurst).
const (
	releaseAfterMoves = 512
	releaseEvery      = 30 * time.Second
)

// An HTTP/1 connection waiting for its next request parks its buffers at
// once (park.go), but its goroutine stays, waiting on the socket, with
// the stack its requests grew (7 to 10 KiB; Go shrinks stacks only during
// a collection): most of what an idle connection costs. A connection idle
// for a while therefore gives its goroutine up too: it moves to the
// manager's idle set, an epoll set of its own (idleset_linux.go) that one
// goroutine waits on through the netpoller, and the goroutine that served
// it returns from HandleConn (listener.ConnHandler allows it). When bytes
// arrive (or the client closes), when its idle timeout or maximum
// duration is due, or when the manager closes, the connection leaves the
// set and a new goroutine goes on with its wait, which finds what woke it
// and serves or ends the connection as before.
//
// Moving costs a goroutine start and a stack growth (about 3 µs) on the
// connection's next request, too much for every request of a busy
// connection, so only connections idle for a whole sweep period move: a
// sweep every idleSweepEvery, scheduled while connections wait, wakes
// those that waited through the previous period too (a read deadline in
// the past, as Manager.Close wakes them). A busy connection pays for it a
// counter under the lock it takes per request already and an atomic load.

// startWait records that the connection waits between requests (see
// setIdle), and that the sweep may move it to the idle set when it can
// park. It fails once the manager is closing.
func (c *serverConn) startWait() bool {
	c.mu.Lock()
	c.idle = true
	c.inlining = false
	if c.closing {
		// closeIfIdle may have moved the read deadline.
		c.rd.forget()
		c.mu.Unlock()
		return false
	}
	sweep := c.park.raw != nil && idleSetSupported
	// From its second request on, the sweep lets the buffers go if the
	// connection stays idle (see parkState.hold).
	c.park.hold = sweep && c.requests > 1
	if sweep {
		c.waiting = true
		c.waits++
	}
	c.mu.Unlock()
	if sweep {
		c.m.scheduleSweep()
	}
	return true
}

// scheduleSweep makes sure a sweep is due.
func (m *Manager) scheduleSweep() {
	if !m.sweeping.Load() && m.sweeping.CompareAndSwap(false, true) {
		m.sweep.Reset(idleSweepEvery)
	}
}

// sweepIdle is the sweep: it wakes the connections that waited through
// the whole period since the previous sweep, so that they move to the
// idle set, and schedules the next sweep while connections wait. A
// connection that starts waiting during a sweep schedules the next one
// itself (sweeping is cleared first).
func (m *Manager) sweepIdle() {
	m.sweeping.Store(false)
	waiting, moved := 0, 0
	m.mu.Lock()
	for c := range m.conns {
		switch c.sweep() {
		case sweptWaiting:
			waiting++
		case sweptMoving:
			moved++
		}
		if c.sweepUpstreamWait() {
			// Counted as waiting: the next sweep looks again.
			waiting++
		}
	}
	release := m.releaseAfterBurst(moved, waiting)
	m.mu.Unlock()
	if waiting > 0 {
		m.scheduleSweep()
	}
	if release {
		go debug.FreeOSMemory()
	}
}

// releaseAfterBurst reports whether the memory a burst of connections
// left behind goes back to the system now: the stacks their goroutines
// grew serving a request (about 8 KiB each), given up as they moved to
// the idle set, stay with the runtime until a collection frees them and
// its scavenger returns them, which an idle proxy may never get to. Once
// a sweep finds no more connections to move (or moves none) after at
// least releaseAfterMoves moved, and at most once per releaseEvery, a
// forced collection returns them (what the overload manager's shrink_heap
// does under memory pressure); its cost, that of one collection of the
// heap, is paid rarely and only after an idle burst. m.mu is held.
func (m *Manager) releaseAfterBurst(moved, waiting int) bool {
	m.movedSinceRelease += moved
	if m.movedSinceRelease < releaseAfterMoves || moved > 0 && waiting > 0 {
		return false
	}
	now := time.Now()
	if !m.lastRelease.IsZero() && now.Sub(m.lastRelease) < releaseEvery {
		return false
	}
	m.movedSinceRelease, m.lastRelease = 0, now
	return true
}

// What sweep found.
const (
	sweptNone = iota
	// sweptWaiting: the connection waits, and moves at the next sweep
	// if it still does.
	sweptWaiting
	// sweptMoving: the connection is woken to move to the idle set.
	sweptMoving
)

// sweep wakes the connection's wait to move it to the idle set if it has
// been waiting since the previous sweep.
func (c *serverConn) sweep() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.waiting || c.evicting || c.closing {
		return sweptNone
	}
	if c.waits != c.swept {
		c.swept = c.waits
		return sweptWaiting
	}
	c.evicting = true
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	return sweptMoving
}

// evicted reports whether the sweep woke the connection's wait, and
// clears the mark.
func (c *serverConn) evicted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.evicting
	c.evicting = false
	return e
}

// moveToIdleSet gives the connection's buffers back and moves it to the
// idle set, to be resumed at the latest at d (its idle timeout or maximum
// duration; zero for never), and reports whether it did: from then on
// the connection belongs to the goroutine the set starts for it. It does
// not move when something is buffered, when an upstream transport may
// still read from its buffers, or when the manager is closing.
func (c *serverConn) moveToIdleSet(d time.Time) bool {
	if c.br != nil && c.br.Buffered() > 0 || !c.letGo() {
		return false
	}
	// Set before the move, which hands the connection over.
	c.resumed = true
	c.mu.Lock()
	defer c.mu.Unlock()
	// The sweep need not look at it again until it waits anew.
	c.waiting = false
	if c.closing || !c.m.idlers.add(c, d) {
		c.resumed = false
		return false
	}
	return true
}

// resume goes on serving a connection the idle set let go, on a goroutine
// of its own.
func (c *serverConn) resume() {
	c.guard(c.continueHTTP1)
}
