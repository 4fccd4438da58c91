package httpconn

import (
	"context"
	"sync"
	"time"
)

// armReset makes cancel, which ends the upstream exchange's context, what
// an HTTP/2 client's reset of the stream, an HTTP/1 client's close seen by
// the sweep (awaitsweep.go) or a forced shutdown calls through interrupt,
// so that the exchange or its wait for a connection stops; a reset that
// came before is honoured at once. disarmReset undoes it.
//
// The cancel func sits in a mutex-guarded field rather than behind an
// atomic pointer so that arming allocates nothing per request.
func (s *stream) armReset(cancel context.CancelFunc) {
	s.upMu.Lock()
	s.upCancel = cancel
	s.upMu.Unlock()
	// After the store: a reset whose interrupt ran before it set
	// peerReset (or peerClosed) first.
	if s.peerReset.Load() || s.peerClosed.Load() {
		cancel()
	}
}

// disarmReset ends what armReset set up.
func (s *stream) disarmReset() {
	s.upMu.Lock()
	s.upCancel = nil
	s.upMu.Unlock()
}

// lazyResetCtx is the context under which an HTTP/2 client's request gets
// an HTTP/1.1 upstream connection: its parent's, which the stream's reset
// also ends. The derived context, and the cancel func a reset calls, are
// made only once the pool looks at the context at all, which it does only
// when the request has to dial or wait pending: a request served by an
// idle connection, the common case, costs no allocation.
//
// It lives in the stream and is valid from start to end; the pool keeps
// no context past its return. Looked at after end, it reads as
// cancelled.
type lazyResetCtx struct {
	s      *stream
	parent context.Context

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	ended  bool
}

// start readies c for one acquisition of s under parent.
func (c *lazyResetCtx) start(s *stream, parent context.Context) context.Context {
	c.mu.Lock()
	c.s, c.parent, c.ctx, c.cancel, c.ended = s, parent, nil, nil, false
	c.mu.Unlock()
	return c
}

// end cancels the derived context, if one was made, and disarms the
// reset.
func (c *lazyResetCtx) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.cancel != nil {
		c.s.disarmReset()
		c.cancel()
	}
}

// derived makes the context Done and Err answer for, on first use.
func (c *lazyResetCtx) derived() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(c.parent)
		if c.ended {
			c.cancel()
		} else {
			c.s.armReset(c.cancel)
		}
	}
	return c.ctx
}

// Deadline is the parent's: the derived context adds none, so asking for
// it derives nothing.
func (c *lazyResetCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done is the derived context's.
func (c *lazyResetCtx) Done() <-chan struct{} { return c.derived().Done() }

// Err is the derived context's.
func (c *lazyResetCtx) Err() error { return c.derived().Err() }

// Value is the derived context's once there is one, so that context.Cause
// and the context package's own lookups see it rather than the parent.
// Before that it is the parent's, as long as the stream was neither reset
// nor ended: the pool reads values (the source address, the TLS override)
// of every request, and a derived context not yet cancelled answers
// every lookup as its parent does, so deriving one for them would only
// cost the allocations this type exists to avoid.
func (c *lazyResetCtx) Value(key any) any {
	c.mu.Lock()
	ctx, parent := c.ctx, c.parent
	undisturbed := !c.ended && !c.s.peerReset.Load()
	c.mu.Unlock()
	if ctx == nil && undisturbed {
		return parent.Value(key)
	}
	return c.derived().Value(key)
}
