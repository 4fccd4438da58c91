package upstream

import (
	"net"
	"net/netip"
)

// PickContext is what a load balancer may read of the downstream side of
// one pick, as Envoy's load balancer context offers it: the downstream
// connection and, for HTTP, the request headers. The ORIGINAL_DST
// cluster reads it; the other clusters ignore it. A nil *PickContext has
// no downstream (a gRPC channel's dial).
type PickContext struct {
	// OriginalDst is the downstream connection's local address when a
	// listener restored it (the original_dst listener filter, or a
	// use_original_dst listener); the zero value when none did.
	OriginalDst netip.AddrPort
	// Headers are the request headers of an HTTP pick, nil for a TCP one.
	Headers HeaderGetter
	// PreviousHosts are the hosts a retry's previous attempts went to,
	// which the previous_hosts retry host predicate avoids: while a pick
	// is one of them, the cluster picks again, up to HostReselections
	// more times, then keeps its last pick (Envoy's
	// host_selection_retry_max_attempts).
	PreviousHosts    []*Host
	HostReselections int
}

// Rejects reports whether the retry host predicate turns h down.
func (pc *PickContext) Rejects(h *Host) bool {
	for _, p := range pc.PreviousHosts {
		if p == h {
			return true
		}
	}
	return false
}

// HeaderGetter reads one request header by its lower-case name; several
// fields of one name come back joined by ",".
type HeaderGetter interface {
	Get(name string) (string, bool)
}

// localRestorer is a downstream connection that knows whether a listener
// restored its local address (*listener.Conn).
type localRestorer interface {
	LocalAddrRestored() bool
}

// OriginalDst returns the restored local address of a downstream
// connection, looking through wrappers (TLS) that expose the connection
// they wrap with NetConn; false when no listener restored it.
func OriginalDst(c net.Conn) (netip.AddrPort, bool) {
	for range 4 { // a TLS connection over a listener's: two levels at most
		if r, ok := c.(localRestorer); ok {
			if !r.LocalAddrRestored() {
				return netip.AddrPort{}, false
			}
			ta, ok := c.LocalAddr().(*net.TCPAddr)
			if !ok {
				return netip.AddrPort{}, false
			}
			ap := ta.AddrPort()
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return netip.AddrPort{}, false
		}
		c = w.NetConn()
	}
	return netip.AddrPort{}, false
}
