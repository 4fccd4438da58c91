package listener

import (
	"sync"
	"sync/atomic"
)

// maxIdleRunners bounds the goroutines a listener keeps waiting for its
// next connections.
const maxIdleRunners = 128

// runner runs each connection on a goroutine of its own, reusing the
// goroutine of a connection that ended for a new one. A new goroutine
// starts with a small stack, which a TLS handshake's arithmetic (P-256,
// X25519) grows two or three times over, copying it each time: about a
// twentieth of a new handshake's CPU. A reused goroutine has grown its
// stack already (the GC halves an idle one's at most once per cycle).
// Idle goroutines end when the listener stops.
type runner struct {
	stop <-chan struct{}
	mu   sync.Mutex
	// idle are the channels of the goroutines waiting for work, the
	// last one to have waited last.
	idle []chan func()
	// spawned counts the goroutines started.
	spawned atomic.Uint64
}

// run runs f on a waiting goroutine, or on a new one.
func (r *runner) run(f func()) {
	r.mu.Lock()
	if n := len(r.idle); n > 0 {
		ch := r.idle[n-1]
		r.idle[n-1] = nil
		r.idle = r.idle[:n-1]
		r.mu.Unlock()
		ch <- f // buffered: never blocks
		return
	}
	r.mu.Unlock()
	r.spawned.Add(1)
	go r.work(f)
}

// work runs f, then the work it is given, until the listener stops or
// enough goroutines are waiting already.
func (r *runner) work(f func()) {
	ch := make(chan func(), 1)
	for {
		f()
		f = nil // not kept alive while waiting
		if !r.park(ch) {
			return
		}
		select {
		case f = <-ch:
			continue
		case <-r.stop:
		}
		if r.unpark(ch) {
			return
		}
		// Taken as the listener stopped: its work is on the way.
		f = <-ch
	}
}

// park lists ch as waiting, unless the listener stopped or enough
// goroutines wait.
func (r *runner) park(ch chan func()) bool {
	select {
	case <-r.stop:
		return false
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.idle) >= maxIdleRunners {
		return false
	}
	r.idle = append(r.idle, ch)
	return true
}

// unpark removes ch from the waiting list and reports whether it was
// still there.
func (r *runner) unpark(ch chan func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.idle {
		if c == ch {
			r.idle = append(r.idle[:i], r.idle[i+1:]...)
			return true
		}
	}
	return false
}
