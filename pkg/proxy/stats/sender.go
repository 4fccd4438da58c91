package stats

import (
	"context"
	"sync"
	"time"
)

// Sender runs the exports of a sink that sends each flush's messages to a
// remote service (the OpenTelemetry and metrics service sinks), beside the
// flush: a slow service never delays the flush or the other sinks. At most
// one flush's messages wait: a flush that finds its predecessor's still
// waiting replaces them, so memory stays bounded whatever the service
// does, and the service gets current values when it comes back.
type Sender[T any] struct {
	send func(ctx context.Context, msgs []T)

	mu      sync.Mutex
	pending []T
	waiting bool
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewSender starts the goroutine that calls send with each flush's
// messages, in order, one flush at a time. ctx given to send is
// cancelled when Close gives up waiting.
func NewSender[T any](send func(ctx context.Context, msgs []T)) *Sender[T] {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender[T]{send: send, wake: make(chan struct{}, 1), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go s.run()
	return s
}

// Queue hands over a flush's messages. It reports whether they replaced
// an earlier flush's that were still waiting (which the caller may log).
// After Close it does nothing.
func (s *Sender[T]) Queue(msgs []T) (replaced bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	replaced = s.waiting
	s.pending, s.waiting = msgs, true
	s.mu.Unlock()
	s.poke()
	return replaced
}

func (s *Sender[T]) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Sender[T]) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		msgs, waiting, closed := s.pending, s.waiting, s.closed
		s.pending, s.waiting = nil, false
		s.mu.Unlock()
		if waiting {
			s.send(s.ctx, msgs)
			continue
		}
		if closed {
			return
		}
		<-s.wake
	}
}

// Close sends what is waiting (the server's last flush), giving the
// sends grace before it cancels them: shutting down waits for a live
// service, not for a dead one. It returns once the goroutine has ended.
func (s *Sender[T]) Close(grace time.Duration) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.poke()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.cancel()
		<-s.done
	}
	s.cancel()
}
