package accesslog

import (
	"context"
	"sync/atomic"
	"time"
)

// Envoy's defaults of the buffer of the loggers that send to a service
// (buffer_flush_interval and buffer_size_bytes).
const (
	DefaultFlushInterval = time.Second
	DefaultBufferBytes   = 16384
)

// Sender runs the deliveries of a sink that batches entries for a
// service (the gRPC access loggers): on a goroutine of its own, every
// interval and whenever the sink wakes it, so that logging never waits
// for the service.
type Sender struct {
	kick chan struct{} // Wake's
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the goroutine has ended
	ctx  context.Context
	// cancel ends Context: when the last delivery's grace is over.
	cancel context.CancelFunc
	closed atomic.Bool
}

// StartSender starts calling deliver every interval and when woken; when
// closed, it calls last instead, once, and ends.
func StartSender(interval time.Duration, deliver, last func()) *Sender {
	s := &Sender{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run(interval, deliver, last)
	return s
}

func (s *Sender) run(interval time.Duration, deliver, last func()) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.kick:
		case <-s.stop:
			last()
			return
		}
		deliver()
	}
}

// Wake asks for a delivery now; it never blocks.
func (s *Sender) Wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Context is the context of every call to the service: it ends when
// Close's grace is over.
func (s *Sender) Context() context.Context { return s.ctx }

// Closed reports whether Close was called. A sink that reads it under the
// lock of its buffer, and adds entries only when it is false, has every
// entry it added in the last delivery, which takes the buffer under that
// lock.
func (s *Sender) Closed() bool { return s.closed.Load() }

// Close makes the last delivery and waits for it, at most grace: then
// Context ends, which ends the calls in flight. It reports false when the
// sender was closed already.
func (s *Sender) Close(grace time.Duration) bool {
	if !s.closed.CompareAndSwap(false, true) {
		return false
	}
	close(s.stop)
	timer := time.AfterFunc(grace, s.cancel)
	<-s.done
	timer.Stop()
	s.cancel()
	return true
}
