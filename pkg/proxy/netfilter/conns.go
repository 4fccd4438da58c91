package netfilter

import (
	"context"
	"net"
	"sync"
	"time"
)

// ConnSet is the open connections of a terminal filter that serves them
// itself (echo, direct_response), for its Close and Shutdown: Close stops
// new connections, Shutdown waits for the open ones and then cuts them.
// The zero value is ready to use.
type ConnSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Add records c, or closes it and returns false once the set is closed.
func (s *ConnSet) Add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

// Done forgets c (Add's, once it is served) and closes it.
func (s *ConnSet) Done(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close stops taking connections; it implements Terminal's Close.
func (s *ConnSet) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// Shutdown closes the set and waits, until ctx ends at the latest, for
// its connections to be done; then it cuts the ones left.
func (s *ConnSet) Shutdown(ctx context.Context) error {
	_ = s.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.SetDeadline(time.Unix(1, 0))
		_ = c.Close()
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}
