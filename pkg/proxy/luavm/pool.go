package luavm

import "runtime"

// Pool keeps the idle states of one script (V is the caller's state type,
// a State with what its calls need). A call takes one, so a state never
// serves two calls at once, and gives it back after; a call that finds
// none makes one.
type Pool[V any] struct {
	free chan V
	open func() (V, error)
	drop func(V)
}

// NewPool returns an empty pool that makes states with open and closes
// with drop those it cannot keep. It keeps a few idle states per core, as
// streams run in goroutines of their own rather than on a few workers.
func NewPool[V any](open func() (V, error), drop func(V)) *Pool[V] {
	return &Pool[V]{free: make(chan V, 2*runtime.GOMAXPROCS(0)), open: open, drop: drop}
}

// Get takes an idle state, or makes one.
func (p *Pool[V]) Get() (V, error) {
	select {
	case v := <-p.free:
		return v, nil
	default:
		return p.open()
	}
}

// Put gives v back; a full pool closes it.
func (p *Pool[V]) Put(v V) {
	select {
	case p.free <- v:
	default:
		p.drop(v)
	}
}

// Idle is how many idle states the pool holds.
func (p *Pool[V]) Idle() int { return len(p.free) }

// Drain closes the idle states: the pool's owner is done with it.
func (p *Pool[V]) Drain() {
	for {
		select {
		case v := <-p.free:
			p.drop(v)
		default:
			return
		}
	}
}
