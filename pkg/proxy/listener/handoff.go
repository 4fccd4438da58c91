package listener

import (
	"net"
	"net/netip"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// Handoff finds the listener that serves an original destination, for a
// use_original_dst listener; nil when none does (the connection then
// stays on the listener that accepted it). The server implements it over
// its active listeners with MatchAddress.
type Handoff func(dst netip.AddrPort) *Listener

// AddressMatch is how a listener's addresses match an original
// destination: exactly, by a wildcard address on its port, or not at all.
type AddressMatch int

// The matches, weakest first.
const (
	NoMatch AddressMatch = iota
	WildcardMatch
	ExactMatch
)

// MatchAddress reports how the listener's addresses (the bound ones, for
// a port the kernel chose) match dst: an exact ip:port, or 0.0.0.0:port
// for IPv4 and [::]:port for IPv6 (a dual-stack [::] takes both), as
// Envoy finds the listener a redirected connection belongs to. A stopped
// listener matches nothing.
func (l *Listener) MatchAddress(dst netip.AddrPort) AddressMatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return NoMatch
	}
	best := NoMatch
	for i, a := range l.addrs {
		port := a.addr.Port()
		if i < len(l.bound) {
			if ta, ok := l.bound[i].(*net.TCPAddr); ok {
				port = uint16(ta.Port)
			}
		}
		if port != dst.Port() {
			continue
		}
		ip := a.addr.Addr()
		switch {
		case ip == dst.Addr():
			return ExactMatch
		case ip == netip.IPv4Unspecified() && dst.Addr().Is4(),
			ip == netip.IPv6Unspecified() && (dst.Addr().Is6() || a.network == "tcp"):
			best = WildcardMatch
		}
	}
	return best
}

// handOff passes a connection whose listener filters restored an original
// destination to the listener that serves that destination, as Envoy's
// use_original_dst does: the connection stops counting on this listener
// (it was never admitted here), and the other one applies its own
// connection limit, runs its own listener filters and chooses among its
// own filter chains, counting the connection in its stats. It reports
// whether the connection was handed off (false: it stays here).
func (l *Listener) handOff(c net.Conn, sock *listenerfilter.Socket, ws *workerStats) bool {
	if l.handoff == nil || !sock.LocalRestored() {
		return false
	}
	dst := addrPort(sock.LocalAddr())
	if !dst.IsValid() {
		return false
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	to := l.handoff(dst)
	if to == nil || to == l {
		return false
	}
	// Leave this listener's count, keep the global one.
	l.active.Add(-1)
	to.acceptHandedOff(c, sock, l.workerIndex(ws))
	return true
}

// acceptHandedOff admits a connection another listener handed off, as
// accept does a new one, minus the global limit and the overload
// actions, which the first listener applied already.
func (l *Listener) acceptHandedOff(c net.Conn, sock *listenerfilter.Socket, worker int) {
	ws := &l.workerStats[worker%len(l.workerStats)]
	if !l.reserve() {
		l.releaseGlobal()
		l.stats.cxOverflow.Inc()
		l.refuse(c, "listener connection limit reached")
		return
	}
	if len(l.lfilters) > 0 {
		l.runListenerFilters(c, ws, sock)
		return
	}
	if conn, ch := l.admit(c, ws, sock); conn != nil {
		l.serve(conn, ch)
	}
}

// workerIndex is the index of a worker's stats, so that a handed-off
// connection counts for the same worker on its new listener.
func (l *Listener) workerIndex(ws *workerStats) int {
	for i := range l.workerStats {
		if &l.workerStats[i] == ws {
			return i
		}
	}
	return 0
}
