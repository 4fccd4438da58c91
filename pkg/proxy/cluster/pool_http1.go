package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// gonePollInterval is how often a request waiting for a connection looks
// whether its client went away.
const gonePollInterval = 200 * time.Millisecond

// http1Pool holds one host's idle HTTP/1.1 connections. The most recently
// released connection is reused first (LIFO): it is the least likely to
// have been closed by the upstream, and the others age out.
//
// The idle connections are split in shares, each under a lock of its own,
// so that requests of different workers (several GOMAXPROCS) do not wait
// on one lock at every acquisition and release: a request takes from the
// share its downstream connection names (upstream.Acquire.Share) and, when
// that one is empty, from the others before it dials; a connection goes
// back to the share of the request that last borrowed it. One process
// with GOMAXPROCS 1, and every caller that names no share, use share 0
// only, which behaves as the single idle list did.
type http1Pool struct {
	shares [h1PoolShares]idleShare
	// mu guards waiters. Lock order: the shares' locks (in index order)
	// before mu.
	mu sync.Mutex
	// waiters are the requests waiting for a connection to the host that
	// max_connections kept from opening, first come first served: a
	// released connection goes to the first of them rather than to the
	// idle list. Each channel has room for the one connection (or the
	// nil "try again" signal) it is ever sent.
	waiters []waiter
	// nwaiters is len(waiters), for a release that looks without mu
	// (under its share's lock: see enqueue).
	nwaiters atomic.Int32
	// retired is set once the pool's host left the cluster: connections
	// released to it are closed.
	retired atomic.Bool
	// open counts the pool's connections, connecting, lent or idle.
	open atomic.Int32
	// active counts its connections lent, on a cluster that preconnects
	// (per_upstream_preconnect_ratio) only.
	active atomic.Int32
}

// h1PoolShares bounds the shares of a pool's idle connections; a process
// uses min(GOMAXPROCS, h1PoolShares) of them (see poolShares).
const h1PoolShares = 4

// idleShare is a share of a pool's idle connections, padded to a cache
// line of its own so that the workers' locks do not share one.
type idleShare struct {
	mu   sync.Mutex
	idle []*trackedConn // oldest first
	_    [64 - 8 - 24]byte
}

// poolShares is how many shares of its pools' idle connections a cluster
// uses: one per scheduler thread, up to h1PoolShares.
func poolShares() uint32 {
	return uint32(min(max(runtime.GOMAXPROCS(0), 1), h1PoolShares))
}

// shareOf is the share a request naming hint takes from.
func (c *Cluster) shareOf(hint uint32) uint32 {
	if c.shares <= 1 {
		return 0
	}
	return hint % c.shares
}

// waiter is a request waiting for a connection of a pool: the channel it
// is handed one on, and the connection it needs (see trackedConn.key).
type waiter struct {
	ch  chan *trackedConn
	key poolKey
}

// AcquireHTTP1 lends a connection to h for one request: the most recently
// released idle connection that is still usable, or a new one dialled
// within connect_timeout. Idle connections past idle_timeout, closed by
// the upstream or holding unsolicited bytes are closed on the way; the
// last two are found by a non-blocking probe, skipped for a connection
// lent less than probeWindow ago (see there why that is safe). Each
// acquisition counts one request in Conn.Requests.
//
// The circuit breakers apply as in Envoy: the request counts against
// max_requests until its release; without an idle connection it waits
// pending (max_pending_requests) for a new one, and when max_connections
// keeps that from opening, for a connection of the host to be released
// or one of the cluster to close, until ctx ends. A refusal is
// upstream.ErrOverflow.
func (c *Cluster) AcquireHTTP1(ctx context.Context, h *upstream.Host) (*upstream.Conn, error) {
	return c.AcquireHTTP1Until(ctx, h, time.Time{}, nil)
}

// AcquireHTTP1Until is AcquireHTTP1 for a request that waits pending no
// later than deadline (the zero time: no limit but ctx), when it gives up
// with context.DeadlineExceeded: the router's route timeout, which Envoy
// applies to a pending request too. gone, when not nil, tells whether the
// request's client went away; it is polled while the request waits for a
// connection to be released, and ends the wait with context.Canceled (an
// HTTP/1.1 client's close is seen only by looking). Neither costs
// anything unless the request waits.
func (c *Cluster) AcquireHTTP1Until(ctx context.Context, h *upstream.Host, deadline time.Time, gone func() bool) (*upstream.Conn, error) {
	return c.AcquireHTTP1For(ctx, h, upstream.Acquire{High: upstream.HighPriority(ctx), Source: upstream.SourceFrom(ctx), Deadline: deadline, Gone: gone})
}

// AcquireHTTP1For is AcquireHTTP1Until for a request that says what it
// is with a rather than in ctx: the connection manager's requests, whose
// priority and source the pool then needs not look up through the
// context chain.
func (c *Cluster) AcquireHTTP1For(ctx context.Context, h *upstream.Host, a upstream.Acquire) (*upstream.Conn, error) {
	if c.Delegates() {
		// The host's own cluster's pool carries an aggregate's request.
		u := c.carrier(h)
		if u == nil {
			return nil, errHostGone
		}
		return u.AcquireHTTP1For(ctx, h, a)
	}
	res := c.breakersOf(a.High)
	if !res.rq.tryAcquire() {
		c.extraCounter(extraRqPendingOverflow).Inc()
		return nil, upstream.ErrOverflow
	}
	res.startRequest()
	conn, err := c.acquireHTTP1(ctx, h, res, &a)
	if err != nil {
		res.rq.release()
		return nil, err
	}
	if tc, ok := conn.Conn.(*trackedConn); ok {
		// The request's max_requests unit, which its release gives back,
		// and the share of the pool it goes back to.
		tc.rq = &res.rq
		tc.share = c.shareOf(a.Share)
	}
	return conn, nil
}

// acquireHTTP1 is AcquireHTTP1 once the request holds its max_requests
// unit.
func (c *Cluster) acquireHTTP1(ctx context.Context, h *upstream.Host, res *resources, a *upstream.Acquire) (*upstream.Conn, error) {
	p := c.set.Load().h1.get(h)
	if p == nil {
		switch {
		case c.settings.protocol.http2:
			return nil, fmt.Errorf("cluster %s uses HTTP/2", c.settings.name)
		case h.Cluster != c.settings.name:
			return nil, fmt.Errorf("host %s is not a member of cluster %s", h.Address, c.settings.name)
		}
		// A host of this cluster removed between the pick and now (by a
		// DNS answer or an EDS update): as in Envoy, a request that chose
		// a host keeps it, here on a connection of its own that is closed
		// when released. It is the host's only one, so it opens even at
		// max_connections, as a pool's first does.
		if !res.cx.tryAcquire() {
			c.extraCounter(extraCxOverflow).Inc()
			res.cx.force()
		}
		return c.dialHTTP1(ctx, h, nil, &res.cx, c.now())
	}
	// One clock read serves the idle timeout, the probe window and the
	// loan's time.
	var kb poolKey
	key := c.h1Key(ctx, &a.Source, &kb)
	share := c.shareOf(a.Share)
	conn := c.takeIdle(p, key, share, c.now())
	if conn == nil {
		var err error
		if conn, err = c.awaitHTTP1(ctx, h, p, res, key, share, a.Deadline, a.Gone); err != nil {
			return nil, err
		}
	}
	if c.settings.preconnect > 0 {
		c.preconnect(ctx, h, p, res)
	}
	return conn, nil
}

// requestKey is the connection a request needs: the server name and SAN
// that auto_sni and auto_san_validation derived from it (none on a
// cluster without them), and the source original_src chose (none
// without it). Requests without either all share connections.
func (c *Cluster) requestKey(ctx context.Context) poolKey {
	k := poolKey{src: upstream.SourceFrom(ctx)}
	k.pp = c.ppKey(ctx)
	if c.settings.protocol.autoSNI != nil && c.settings.tls != nil {
		k.tls = tlsconfig.OverrideFrom(ctx)
	}
	return k
}

// h1Key is the connection an HTTP/1.1 request from src (original_src's
// choice, the zero Source for none) needs, as requestKey says, in k; nil
// for the default key, which the pool matches by a flag rather than field
// by field. A cluster whose settings cannot make another key
// (keyedPools), asked by a request without a source, computes nothing;
// the check is small enough to be inlined.
func (c *Cluster) h1Key(ctx context.Context, src *upstream.Source, k *poolKey) *poolKey {
	if !c.keyedPools && !src.Addr.IsValid() {
		return nil
	}
	return c.makeH1Key(ctx, src, k)
}

// makeH1Key is h1Key for a request that may need another key than the
// default one.
func (c *Cluster) makeH1Key(ctx context.Context, src *upstream.Source, k *poolKey) *poolKey {
	*k = poolKey{src: *src, pp: c.ppKey(ctx)}
	if c.settings.protocol.autoSNI != nil && c.settings.tls != nil {
		k.tls = tlsconfig.OverrideFrom(ctx)
	}
	if *k == (poolKey{}) {
		return nil
	}
	return k
}

// fits reports whether tc was made with key, nil for the default key.
func (tc *trackedConn) fits(key *poolKey) bool {
	if key == nil || !tc.keyed {
		return key == nil && !tc.keyed
	}
	return tc.key == *key
}

// keyValue is key as a value: the zero key for nil.
func keyValue(key *poolKey) poolKey {
	if key == nil {
		return poolKey{}
	}
	return *key
}

// takeIdle lends the pool's most recently released idle connection made
// with the handshake key that is still usable, from share first, or
// returns nil.
func (c *Cluster) takeIdle(p *http1Pool, key *poolKey, share uint32, now time.Time) *upstream.Conn {
	for {
		tc := p.take(c, key, share, now)
		if tc == nil {
			return nil
		}
		if probeDue(tc.lentAt, now) && !tc.probe.usable() {
			if tc.probe.peerEnded() {
				tc.peerEnded.Store(true)
			}
			tc.discard()
			continue
		}
		return lend(tc, now)
	}
}

// lend marks a pooled connection lent at now, with a read buffer from
// the cluster's pool when it has none (an idle connection gives its own
// back when it is released to its pool: see http1Pool.put).
func lend(tc *trackedConn, now time.Time) *upstream.Conn {
	if tc.up.R == nil {
		tc.up.R = tc.c.getReader(tc)
	}
	tc.lentAt = now
	tc.inUse.Store(true)
	if tc.pool != nil && tc.c.settings.preconnect > 0 {
		tc.pool.active.Add(1)
	}
	tc.up.Requests++
	tc.up.Answered = false
	tc.rqs.Add(1)
	return &tc.up
}

// awaitHTTP1 gets a connection for a request that found no idle one: it
// is pending (upstream_rq_pending_*) until it has one, dialled when
// max_connections allows, else handed over at a release.
func (c *Cluster) awaitHTTP1(ctx context.Context, h *upstream.Host, p *http1Pool, res *resources, key *poolKey, share uint32, deadline time.Time, gone func() bool) (*upstream.Conn, error) {
	if !res.pending.tryAcquire() {
		c.extraCounter(extraRqPendingOverflow).Inc()
		return nil, upstream.ErrOverflow
	}
	c.stats.UpstreamRqPendingTotal.Inc()
	c.stats.UpstreamRqPendingActive.Inc()
	defer func() {
		res.pending.release()
		c.stats.UpstreamRqPendingActive.Dec()
	}()
	conn, err := c.pendingHTTP1(ctx, h, p, res, key, share, deadline, gone)
	switch {
	case err == nil, errors.Is(err, ErrClosed):
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Its client went away, or its route timeout passed.
		c.extraCounter(extraRqCancelled).Inc()
	default:
		// The connection it waited for failed.
		c.extraCounter(extraRqPendingFailureEject).Inc()
	}
	return conn, err
}

// pendingHTTP1 is awaitHTTP1's wait, once the request counts as pending.
func (c *Cluster) pendingHTTP1(ctx context.Context, h *upstream.Host, p *http1Pool, res *resources, key *poolKey, share uint32, deadline time.Time, gone func() bool) (*upstream.Conn, error) {
	overflowed := false
	for {
		if c.isClosed() {
			return nil, ErrClosed
		}
		if !hostFull(h, res, int64(p.open.Load())) && res.cx.tryAcquire() {
			return c.dialHTTP1(ctx, h, p, &res.cx, c.now())
		}
		if !overflowed {
			// Counted once per request that max_connections (the
			// cluster's or the host's) held back.
			c.extraCounter(extraCxOverflow).Inc()
			overflowed = true
		}
		if p.open.Load() == 0 {
			// Connections to other hosts hold the limit: this host gets
			// one anyway, or its requests could wait on connections that
			// never come back to it (Envoy does the same).
			if !res.cx.tryAcquire() {
				res.cx.force()
			}
			return c.dialHTTP1(ctx, h, p, &res.cx, c.now())
		}
		if !deadline.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
			deadline = time.Time{}
		}
		tc, err := c.waitHTTP1(ctx, p, key, res, gone)
		if err != nil {
			return nil, err
		}
		if tc != nil {
			return lend(tc, c.now()), nil
		}
		if conn := c.takeIdle(p, key, share, c.now()); conn != nil {
			return conn, nil
		}
	}
}

// waitHTTP1 waits, until ctx ends or gone (when not nil, polled every
// gonePollInterval) reports the client gone, for a connection made with
// the handshake key released to p (which it returns) or for a connection
// of the cluster to close (nil: the caller tries again).
func (c *Cluster) waitHTTP1(ctx context.Context, p *http1Pool, key *poolKey, res *resources, gone func() bool) (*trackedConn, error) {
	w := make(chan *trackedConn, 1)
	if !p.enqueue(w, key) {
		// A connection came back to the idle list meanwhile.
		return nil, nil
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	if res.cx.canAcquire() && !hostFull(nil, res, int64(p.open.Load())) && p.dequeue(w) {
		// A connection closed between the refusal and the enqueue: its
		// wake-up found no waiter.
		return nil, nil
	}
	var poll <-chan time.Time
	if gone != nil {
		t := time.NewTicker(gonePollInterval)
		defer t.Stop()
		poll = t.C
	}
	var err error
	for err == nil {
		select {
		case tc := <-w:
			return tc, nil
		case <-ctx.Done():
			err = ctx.Err()
		case <-poll:
			if gone() {
				err = context.Canceled
			}
		}
	}
	if !p.dequeue(w) {
		// Handed something as the wait ended: pass it on.
		if tc := <-w; tc != nil {
			p.put(c, tc, c.now())
		} else {
			c.wakeWaiter()
		}
	}
	return nil, err
}

// enqueue adds a waiter unless the pool has an idle connection. Idle
// connections all made for other requests (auto_sni: other server
// names) would never serve the waiter: the oldest of the first share
// holding any is closed instead, which frees its max_connections unit for
// the caller's next try. Every share's lock is held meanwhile, so that a
// release either sees the waiter or left its connection where this looks.
func (p *http1Pool) enqueue(w chan *trackedConn, key *poolKey) bool {
	for i := range p.shares {
		p.shares[i].mu.Lock()
		defer p.shares[i].mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.shares {
		sh := &p.shares[i]
		if len(sh.idle) == 0 {
			continue
		}
		if !p.fitsAny(key) {
			sh.idle[0].discard()
			sh.idle[0] = nil
			sh.idle = slices.Delete(sh.idle, 0, 1)
		}
		return false
	}
	p.waiters = append(p.waiters, waiter{ch: w, key: keyValue(key)})
	p.nwaiters.Store(int32(len(p.waiters)))
	return true
}

// fitsAny reports whether an idle connection of any share was made with
// the handshake key. The caller holds every share's lock.
func (p *http1Pool) fitsAny(key *poolKey) bool {
	for i := range p.shares {
		if p.shares[i].lastIdle(key) >= 0 {
			return true
		}
	}
	return false
}

// lastIdle is the index of the most recently released idle connection
// of the share made with the handshake key, -1 when none. The caller
// holds sh.mu.
func (sh *idleShare) lastIdle(key *poolKey) int {
	for i := len(sh.idle) - 1; i >= 0; i-- {
		if sh.idle[i].fits(key) {
			return i
		}
	}
	return -1
}

// dequeue removes a waiter; false when it was already handed something,
// which is then in its channel.
func (p *http1Pool) dequeue(w chan *trackedConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.waiters {
		if x.ch == w {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			p.nwaiters.Store(int32(len(p.waiters)))
			return true
		}
	}
	return false
}

// signal hands tc (nil for "try again") to the first waiter (for tc, the
// first waiting for a connection made with tc's handshake) and reports
// whether there was one. The caller holds p.mu.
func (p *http1Pool) signal(tc *trackedConn) bool {
	for i, w := range p.waiters {
		if tc != nil && w.key != tc.key {
			continue
		}
		p.waiters = slices.Delete(p.waiters, i, i+1)
		p.nwaiters.Store(int32(len(p.waiters)))
		w.ch <- tc
		return true
	}
	return false
}

// wakeAll tells every waiter to try again (the host left the cluster, or
// the cluster closed).
func (p *http1Pool) wakeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.signal(nil) {
	}
}

// wakeWaiter tells one waiting request of the cluster that a connection
// slot is free.
func (c *Cluster) wakeWaiter() {
	for _, p := range c.set.Load().h1.all() {
		p.mu.Lock()
		woke := p.signal(nil)
		p.mu.Unlock()
		if woke {
			return
		}
	}
}

// releaseConnSlot gives a connection's max_connections unit back and, when
// requests wait for one, wakes one of them. The wake-up runs on its own
// goroutine: connections close under their pool's lock.
func (c *Cluster) releaseConnSlot(cx *resource) { c.releaseConnSlotOf(cx, nil) }

// releaseConnSlotOf is releaseConnSlot for a connection of pool p (nil
// for none): a request waiting in p is woken first, since the host's
// own max_connections (per_host_thresholds) may be what holds it.
func (c *Cluster) releaseConnSlotOf(cx *resource, p *http1Pool) {
	cx.release()
	if c.waiting.Load() > 0 {
		go c.wakeWaiterOf(p)
	}
}

// wakeWaiterOf wakes a request waiting in p (nil: none), else one of the
// cluster's.
func (c *Cluster) wakeWaiterOf(p *http1Pool) {
	if p != nil {
		p.mu.Lock()
		woke := p.signal(nil)
		p.mu.Unlock()
		if woke {
			return
		}
	}
	c.wakeWaiter()
}

// dialHTTP1 opens a new HTTP/1.1 connection to h, for pool p (nil for a
// host no longer in the cluster), holding the max_connections unit cx
// until it closes, and lends it.
func (c *Cluster) dialHTTP1(ctx context.Context, h *upstream.Host, p *http1Pool, cx *resource, now time.Time) (*upstream.Conn, error) {
	if p != nil {
		p.open.Add(1)
	}
	tc, err := c.connect(ctx, h, alpnHTTP1)
	if err != nil {
		if p != nil {
			p.open.Add(-1)
		}
		c.releaseConnSlot(cx)
		return nil, err
	}
	tc.cx, tc.pool, tc.http = cx, p, true
	tc.rqs.Store(1)
	c.stats.UpstreamCxHTTP1Total().Inc()
	tc.probe.init(tc.Conn)
	tc.up = upstream.Conn{Conn: tc, Host: h, R: c.getReader(tc), Buffers: tc, Requests: 1}
	// The time before the dial: earlier than the loan, which only makes
	// the window shorter.
	tc.lentAt = now
	tc.inUse.Store(true)
	if p != nil && c.settings.preconnect > 0 {
		p.active.Add(1)
	}
	return &tc.up, nil
}

// ReleaseHTTP1 takes back a connection lent by AcquireHTTP1. A reusable
// connection (the response was read completely and the upstream did not
// ask to close) goes back to the idle list unless it reached
// max_requests_per_connection or holds unread bytes; any other is closed.
// The caller must not use the connection or its reader afterwards. A
// second release of the same loan is ignored.
func (c *Cluster) ReleaseHTTP1(conn *upstream.Conn, reusable bool) {
	if conn == nil {
		return
	}
	tc, ok := conn.Conn.(*trackedConn)
	if ok && c.Delegates() && tc.c != c {
		// An aggregate's request: back to the pool it came from.
		tc.c.ReleaseHTTP1(conn, reusable)
		return
	}
	if !ok || tc.c != c {
		// Not one of ours: all that can be done is close it.
		_ = conn.Close()
		return
	}
	if !tc.inUse.CompareAndSwap(true, false) {
		return
	}
	if tc.pool != nil && c.settings.preconnect > 0 {
		tc.pool.active.Add(-1)
	}
	if tc.rq != nil {
		tc.rq.release()
	} else {
		c.breakers().rq.release()
	}
	limit := c.settings.protocol.maxRequestsPerConn
	switch {
	case !reusable || tc.closed.Load() || tc.draining.Load() || tc.up.R.Buffered() > 0:
		if !reusable && !conn.Answered {
			tc.withRq.Store(true)
		}
		tc.discard()
	case limit > 0 && tc.up.Requests >= limit:
		c.extraCounter(extraMaxRequests).Inc()
		tc.discard()
	default:
		// The connection keeps the deadline of its request: whoever
		// borrows it next sets its own before using it (the connection
		// manager per request, a mirror's exchange), and the probe at
		// the loan peeks without looking at deadlines. Clearing it here
		// cost a timer update per request (about 550 instructions).
		p := c.set.Load().h1.get(tc.host)
		if p == nil {
			// The host left the cluster while the request ran.
			tc.discard()
			return
		}
		p.put(c, tc, c.now())
	}
}

// take pops the most recently released idle connection made with the
// handshake key, from share first, then from the others.
func (p *http1Pool) take(c *Cluster, key *poolKey, share uint32, now time.Time) *trackedConn {
	if tc := p.shares[share].take(c, key, now); tc != nil || c.shares <= 1 {
		return tc
	}
	for i := uint32(1); i < c.shares; i++ {
		if tc := p.shares[(share+i)%c.shares].take(c, key, now); tc != nil {
			return tc
		}
	}
	return nil
}

// take pops the share's most recently released idle connection. When
// that one has been idle longer than idle_timeout, so have all the
// others: they are all closed and nil is returned.
func (sh *idleShare) take(c *Cluster, key *poolKey, now time.Time) *trackedConn {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := len(sh.idle)
	if n == 0 {
		return nil
	}
	if expired(c, sh.idle[n-1], now) {
		for _, tc := range sh.idle {
			c.extraCounter(extraIdleTimeout).Inc()
			tc.discard()
		}
		clear(sh.idle)
		sh.idle = sh.idle[:0]
		return nil
	}
	i := n - 1
	if !sh.idle[i].fits(key) {
		// auto_sni, original_src: only a connection to the same server
		// name, from the same source, will do.
		if i = sh.lastIdle(key); i < 0 {
			return nil
		}
	}
	top := sh.idle[i]
	sh.idle = slices.Delete(sh.idle, i, i+1)
	return top
}

// put adds a released connection to its share's idle list, and closes the
// oldest idle connections of the share that have outlived idle_timeout
// meanwhile.
func (p *http1Pool) put(c *Cluster, tc *trackedConn, now time.Time) {
	sh := &p.shares[min(tc.share, h1PoolShares-1)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.isClosed() || p.retired.Load() || c.retired.Load() {
		// A retired cluster's pools may be new since it was retired (a
		// DNS answer just before its resolution stopped): none keeps a
		// connection.
		tc.discard()
		return
	}
	if p.nwaiters.Load() > 0 && p.handOver(tc) {
		return
	}
	stale := 0
	for stale < len(sh.idle) && expired(c, sh.idle[stale], now) {
		c.extraCounter(extraIdleTimeout).Inc()
		sh.idle[stale].discard()
		stale++
	}
	if stale > 0 {
		n := copy(sh.idle, sh.idle[stale:])
		clear(sh.idle[n:])
		sh.idle = sh.idle[:n]
	}
	tc.idleSince = now
	// An idle connection holds no read buffer: its empty one (one holding
	// unread bytes is not reused) goes back to the cluster's pool, and its
	// next loan takes one, as Go's net/http and nginx take a response's
	// buffer per request. Kept while idle, the buffers followed the
	// connections open (128 of 32 KiB under 16 h2c connections × 8
	// streams) rather than the responses being read.
	if r := tc.up.R; r != nil {
		tc.up.R = nil
		c.putReader(r)
	}
	sh.idle = append(sh.idle, tc)
}

// handOver gives a released connection to a waiting request, or closes
// it when requests wait only for connections made otherwise, and reports
// whether it did either. The caller holds the connection's share's lock.
func (p *http1Pool) handOver(tc *trackedConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signal(tc) {
		// A request waits for a connection to the host: it gets this
		// one at once.
		return true
	}
	if len(p.waiters) > 0 {
		// Requests wait for connections to other server names
		// (auto_sni) or from other sources (original_src): closing this
		// one frees its max_connections unit for them.
		tc.discard()
		return true
	}
	return false
}

// retire closes the idle connections of a host that left the cluster and
// makes the pool close any connection released to it later.
func (p *http1Pool) retire() {
	p.retired.Store(true)
	p.closeIdle()
	p.wakeAll()
}

// closeIdle closes every idle connection.
func (p *http1Pool) closeIdle() {
	for i := range p.shares {
		sh := &p.shares[i]
		sh.mu.Lock()
		for _, tc := range sh.idle {
			tc.discard()
		}
		clear(sh.idle)
		sh.idle = sh.idle[:0]
		sh.mu.Unlock()
	}
}

// idleCount is the number of idle connections of every share.
func (p *http1Pool) idleCount() int {
	n := 0
	for i := range p.shares {
		sh := &p.shares[i]
		sh.mu.Lock()
		n += len(sh.idle)
		sh.mu.Unlock()
	}
	return n
}

// expired reports whether an idle connection outlived idle_timeout.
func expired(c *Cluster, tc *trackedConn, now time.Time) bool {
	t := c.settings.protocol.idleTimeout
	return t > 0 && now.Sub(tc.idleSince) >= t
}

// getReader returns a read buffer for conn from the cluster's pool; the
// buffers outlive connections so that a busy cluster does not allocate one
// per connection.
func (c *Cluster) getReader(conn *trackedConn) *bufio.Reader {
	r := c.readers.Get().(*bufio.Reader)
	r.Reset(conn)
	return r
}

// putReader gives a read buffer back to its pool.
func (c *Cluster) putReader(r *bufio.Reader) {
	r.Reset(nil)
	if r.Size() == c.responseBuffer && c.responseBuffer != c.readBuffer {
		c.responseReaders.Put(r)
		return
	}
	c.readers.Put(r)
}

// ResponseReader returns a read buffer for the connection's response,
// whose first bytes are in its socket (upstream.ReadBuffers).
func (tc *trackedConn) ResponseReader() *bufio.Reader {
	c := tc.c
	if c.responseBuffer == c.readBuffer {
		return c.getReader(tc)
	}
	r := c.responseReaders.Get().(*bufio.Reader)
	r.Reset(tc)
	return r
}

// PutReader takes back the connection's empty read buffer
// (upstream.ReadBuffers).
func (tc *trackedConn) PutReader(r *bufio.Reader) { tc.c.putReader(r) }
