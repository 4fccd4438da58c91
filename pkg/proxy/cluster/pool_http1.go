package cluster

import (
	"bufio"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// http1Pool holds one host's idle HTTP/1.1 connections. The most recently
// released connection is reused first (LIFO): it is the least likely to
// have been closed by the upstream, and the others age out.
type http1Pool struct {
	mu   sync.Mutex
	idle []*trackedConn // oldest first
	// retired is set once the pool's host left the cluster: connections
	// released to it are closed.
	retired bool
}

// AcquireHTTP1 lends a connection to h for one request: the most recently
// released idle connection that is still usable, or a new one dialled
// within connect_timeout. Idle connections past idle_timeout, closed by
// the upstream or holding unsolicited bytes are closed on the way; the
// last two are found by a non-blocking probe, skipped for a connection
// lent less than probeWindow ago (see there why that is safe). Each
// acquisition counts one request in Conn.Requests.
func (c *Cluster) AcquireHTTP1(ctx context.Context, h *upstream.Host) (*upstream.Conn, error) {
	p := c.set.Load().h1[h]
	if p == nil {
		switch {
		case c.settings.protocol.http2:
			return nil, fmt.Errorf("cluster %s uses HTTP/2", c.settings.name)
		case c.settings.dns == nil || h.Cluster != c.settings.name:
			return nil, fmt.Errorf("host %s is not a member of cluster %s", h.Address, c.settings.name)
		}
		// A DNS cluster's host, removed by an answer between the pick and
		// now: the request still goes to it, on a connection of its own
		// that is closed when released.
		return c.dialHTTP1(ctx, h, c.now())
	}
	// One clock read serves the idle timeout, the probe window and the
	// loan's time.
	now := c.now()
	for {
		tc := p.take(c, now)
		if tc == nil {
			break
		}
		if probeDue(tc.lentAt, now) && !tc.probe.usable() {
			tc.discard()
			continue
		}
		tc.lentAt = now
		tc.inUse.Store(true)
		tc.up.Requests++
		return &tc.up, nil
	}
	// Circuit breaking will check max_connections here before dialling.
	return c.dialHTTP1(ctx, h, now)
}

// dialHTTP1 opens a new HTTP/1.1 connection to h and lends it.
func (c *Cluster) dialHTTP1(ctx context.Context, h *upstream.Host, now time.Time) (*upstream.Conn, error) {
	tc, err := c.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	c.stats.UpstreamCxHTTP1Total.Inc()
	tc.probe.init(tc.Conn)
	tc.up = upstream.Conn{Conn: tc, Host: h, R: c.getReader(tc), Requests: 1}
	// The time before the dial: earlier than the loan, which only makes
	// the window shorter.
	tc.lentAt = now
	tc.inUse.Store(true)
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
	if !ok || tc.c != c {
		// Not one of ours: all that can be done is close it.
		_ = conn.Close()
		return
	}
	if !tc.inUse.CompareAndSwap(true, false) {
		return
	}
	limit := c.settings.protocol.maxRequestsPerConn
	switch {
	case !reusable || tc.closed.Load() || tc.up.R.Buffered() > 0:
		tc.discard()
	case limit > 0 && tc.up.Requests >= limit:
		c.extra.maxRequests.Inc()
		tc.discard()
	default:
		// The connection manager sets deadlines per request; an idle
		// connection keeps none, or the next probe would see it expired.
		if err := tc.SetDeadline(time.Time{}); err != nil {
			tc.discard()
			return
		}
		p := c.set.Load().h1[tc.host]
		if p == nil {
			// The host left the cluster while the request ran.
			tc.discard()
			return
		}
		p.put(c, tc, c.now())
	}
}

// take pops the most recently released idle connection. When that one has
// been idle longer than idle_timeout, so have all the others: they are all
// closed and nil is returned.
func (p *http1Pool) take(c *Cluster, now time.Time) *trackedConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	top := p.idle[n-1]
	if expired(c, top, now) {
		for _, tc := range p.idle {
			c.extra.idleTimeout.Inc()
			tc.discard()
		}
		clear(p.idle)
		p.idle = p.idle[:0]
		return nil
	}
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return top
}

// put adds a released connection to the idle list, and closes the oldest
// idle connections that have outlived idle_timeout meanwhile.
func (p *http1Pool) put(c *Cluster, tc *trackedConn, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.isClosed() || p.retired {
		tc.discard()
		return
	}
	stale := 0
	for stale < len(p.idle) && expired(c, p.idle[stale], now) {
		c.extra.idleTimeout.Inc()
		p.idle[stale].discard()
		stale++
	}
	if stale > 0 {
		n := copy(p.idle, p.idle[stale:])
		clear(p.idle[n:])
		p.idle = p.idle[:n]
	}
	tc.idleSince = now
	p.idle = append(p.idle, tc)
}

// retire closes the idle connections of a host that left the cluster and
// makes the pool close any connection released to it later.
func (p *http1Pool) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	p.closeIdle()
}

// closeIdle closes every idle connection.
func (p *http1Pool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tc := range p.idle {
		tc.discard()
	}
	clear(p.idle)
	p.idle = p.idle[:0]
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

// putReader gives a read buffer back to the pool.
func (c *Cluster) putReader(r *bufio.Reader) {
	r.Reset(nil)
	c.readers.Put(r)
}
