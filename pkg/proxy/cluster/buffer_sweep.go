package cluster

import "time"

// bufferSweepEvery is the period of the sweep that takes the read buffers
// of HTTP/1.1 connections idle in their pools: an idle connection gives
// its buffer back after between one and two periods without a loan.
const bufferSweepEvery = 500 * time.Millisecond

// A connection released to its pool keeps its read buffer, so that a busy
// pool, whose connections are lent again at once, pays no sync.Pool put
// and get per request; one that stays idle gives it back to the cluster's
// pool at the next sweep past bufferSweepEvery, so that the buffers kept
// follow the connections in use rather than those kept open. The sweep is
// scheduled by a release while none is due, and runs again while idle
// connections still hold buffers. (The connection manager still gives a
// lent connection's buffer back while it waits for a response: see
// upstream.ReadBuffers.)

// scheduleBufferSweep makes sure a sweep of the idle connections' buffers
// is due: an atomic load, inlined, while one is.
func (c *Cluster) scheduleBufferSweep() {
	if !c.bufSweeping.Load() {
		c.startBufferSweep()
	}
}

// startBufferSweep is scheduleBufferSweep while no sweep is due.
func (c *Cluster) startBufferSweep() {
	if !c.bufSweeping.CompareAndSwap(false, true) {
		return
	}
	// Only the caller that set bufSweeping touches the timer.
	if c.bufSweep == nil {
		c.bufSweep = time.AfterFunc(bufferSweepEvery, c.sweepBuffers)
		return
	}
	c.bufSweep.Reset(bufferSweepEvery)
}

// sweepBuffers is the sweep: the idle connections released at least
// bufferSweepEvery ago give their read buffers back; it is scheduled again
// while others still hold one.
func (c *Cluster) sweepBuffers() {
	c.bufSweeping.Store(false)
	now := c.now()
	holding := false
	for _, p := range c.set.Load().h1.all() {
		if p.releaseIdleBuffers(c, now) {
			holding = true
		}
	}
	if holding {
		c.scheduleBufferSweep()
	}
}

// releaseIdleBuffers gives back the read buffers of the pool's connections
// idle since bufferSweepEvery before now, and reports whether others still
// hold one.
func (p *http1Pool) releaseIdleBuffers(c *Cluster, now time.Time) (holding bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tc := range p.idle {
		r := tc.up.R
		switch {
		case r == nil:
		case now.Sub(tc.idleSince) >= bufferSweepEvery:
			tc.up.R = nil
			c.putReader(r)
		default:
			holding = true
		}
	}
	return holding
}
