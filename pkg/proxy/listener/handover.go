package listener

import (
	"fmt"
	"net"
	"time"
)

// deadliner is a socket whose blocked Accept can be woken without closing
// it (*net.TCPListener).
type deadliner interface {
	SetDeadline(t time.Time) error
}

// BindFrom binds the listener like Bind, except that every address it
// shares with old (the same configured address, port 0 included, and the
// same number of sockets) takes old's sockets over instead of binding
// anew. old stops accepting on those sockets, and its other sockets are
// closed: from then on old only serves the connections it has already
// accepted. Connections that arrive during the hand-over wait in the
// kernel's accept queue for the new listener, so an updated listener
// loses none, and a port the kernel chose is kept.
//
// old must be serving, or stopped. When old is nil or stopped, or nothing
// is shared, BindFrom is Bind and old is left as it is. On failure nothing
// changes: old keeps every socket and keeps accepting.
func (l *Listener) BindFrom(old *Listener) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stopped:
		return nil
	case l.sockets != nil:
		return fmt.Errorf("listener %q: already bound", l.name)
	case l.udp != nil:
		// UDP sockets are not handed over: with reuse_port the new
		// socket binds beside the old one, which closes when the old
		// listener retires.
		return l.bindUDP()
	}
	var shared map[socketAddress][]net.Listener
	if old != nil {
		shared = old.shareableSockets(l)
	}
	sockets, err := l.bindAll(shared)
	if err != nil {
		return err
	}
	if len(shared) > 0 {
		old.handOver(shared)
	}
	l.setSockets(sockets)
	return nil
}

// shareableSockets returns l's sockets that next can take over, by
// configured address: none once l has stopped.
func (l *Listener) shareableSockets(next *Listener) map[socketAddress][]net.Listener {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.sockets == nil {
		return nil
	}
	out := map[socketAddress][]net.Listener{}
	for i, a := range l.addrs {
		if len(l.sockets[i]) != next.socketsPerAddress() {
			continue
		}
		for _, b := range next.addrs {
			if a == b {
				out[a] = l.sockets[i]
			}
		}
	}
	return out
}

// handOver stops l's accept loops without closing the sockets in taken,
// which another listener now owns, and closes l's other sockets. It
// returns once l's accept loops have returned, so that no socket is
// accepted on by two listeners at once.
func (l *Listener) handOver(taken map[socketAddress][]net.Listener) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	close(l.stopCh)
	serving := l.serving
	for i, a := range l.addrs {
		socks := l.sockets[i]
		if _, ok := taken[a]; !ok {
			closeAll(socks)
			continue
		}
		// A deadline in the past wakes every Accept blocked on the
		// socket; the loops then see the listener stopped and return.
		for _, s := range socks {
			if d, ok := s.(deadliner); ok {
				_ = d.SetDeadline(time.Unix(1, 0))
			}
		}
	}
	l.sockets = nil
	l.mu.Unlock()
	if serving {
		<-l.done
	}
	for _, socks := range taken {
		for _, s := range socks {
			if d, ok := s.(deadliner); ok {
				_ = d.SetDeadline(time.Time{})
			}
		}
	}
}
