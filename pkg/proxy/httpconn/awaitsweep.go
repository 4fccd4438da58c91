package httpconn

// Envoy notices at once when an HTTP/1 client closes its connection while
// its request waits on the upstream (the connection watches for the
// peer's close even while it does not read), resets the stream and the
// upstream request, and frees both. Here nothing reads an HTTP/1
// connection while its request is upstream, so a client that gave up (a
// timeout, a cancelled page) would hold the upstream request, its
// connection and a pool slot until the route timeout.
//
// Watching every request's socket would cost a system call or two per
// request. The idle sweep (idleset.go), which runs every idleSweepEvery
// while connections wait, looks instead at the connections whose request
// has been waiting on the upstream through a whole sweep period: for
// those only, it peeks at the socket, and when the client has closed it,
// marks the stream (peerClosed) and interrupts its exchange, which then
// ends as a downstream reset (downstreamReset). A request answered within
// a period costs a counter increment and two pointer stores.

// beginUpstreamWait records that the connection's stream waits on its
// upstream from now on: the wait count turns odd.
func (c *serverConn) beginUpstreamWait() {
	c.awaitN++
	c.awaits.Store(c.awaitN)
	c.m.scheduleSweep()
}

// endUpstreamWait records that the stream's upstream answered or failed:
// the count turns even again (once, whatever the calls).
func (c *serverConn) endUpstreamWait() {
	if c.awaitN&1 == 1 {
		c.awaitN++
		c.awaits.Store(c.awaitN)
	}
}

// sweepUpstreamWait checks, for the idle sweep, a connection whose stream
// waits on its upstream, and reports whether it still does (so that
// another sweep is due). A wait that began after the previous sweep is
// only noted; one that lasted the whole period has its client checked.
func (c *serverConn) sweepUpstreamWait() bool {
	n := c.awaits.Load()
	if n&1 == 0 {
		return false
	}
	if n != c.awaitSwept {
		c.awaitSwept = n
		return true
	}
	x := c.xShared.Load()
	if x == nil || !peerGone(c.nc) {
		return x != nil
	}
	// Should the wait have ended meanwhile, the flag reaches the
	// connection's next stream, whose client has gone all the same.
	x.st.peerClosed.Store(true)
	x.st.interrupt()
	return false
}
