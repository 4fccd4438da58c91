package listener

import (
	"net"
	"os"
)

// SocketSource offers n listening sockets already bound to address on
// network ("tcp4", "127.0.0.1:80"), as a hot-restart parent passes them;
// nil when it has none.
type SocketSource func(network, address string, n int) []net.Listener

// SetSocketSource makes Bind take each address's sockets from src when it
// has them, binding anew otherwise. Addresses with port 0 are always bound
// anew: the kernel picks a new port, as Envoy's child does. Call before
// Bind.
func (l *Listener) SetSocketSource(src SocketSource) { l.inherit = src }

// fromSource returns a's sockets from the socket source, nil for none.
func (l *Listener) fromSource(a socketAddress, n int) []net.Listener {
	if l.inherit == nil || a.addr.Port() == 0 {
		return nil
	}
	socks := l.inherit(a.network, a.String(), n)
	if len(socks) != n {
		closeAll(socks)
		return nil
	}
	return socks
}

// filer is a socket whose descriptor can be duplicated (*net.TCPListener).
type filer interface {
	File() (*os.File, error)
}

// DupSockets returns duplicates of the n sockets the listener has bound to
// the configured address (network "tcp4", "127.0.0.1:80"), for a
// hot-restart child; nil when it has none, not n, or has stopped. The
// caller closes the files; the listener keeps its own sockets.
func (l *Listener) DupSockets(network, address string, n int) []*os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.sockets == nil {
		return nil
	}
	for i, a := range l.addrs {
		if a.network != network || a.String() != address || len(l.sockets[i]) != n {
			continue
		}
		var files []*os.File
		for _, s := range l.sockets[i] {
			f, ok := s.(filer)
			if !ok {
				break
			}
			dup, err := f.File()
			if err != nil {
				break
			}
			files = append(files, dup)
		}
		if len(files) == n {
			return files
		}
		for _, f := range files {
			_ = f.Close()
		}
		return nil
	}
	return nil
}
