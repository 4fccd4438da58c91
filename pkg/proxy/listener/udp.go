package listener

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// udpListener is what a UDP listener (address protocol UDP) has instead of
// filter chains: its UDP listener filters, which see every datagram, and
// one socket per address, read by one goroutine each. Replies leave from
// the socket the datagram came in on.
type udpListener struct {
	filters []udpfilter.Filter
	// maxDatagram is downstream_socket_config.max_rx_datagram_size: a
	// longer datagram is dropped (udp.downstream_rx_datagram_dropped), as
	// Envoy drops a truncated one.
	maxDatagram int
	dropped     *stats.Counter
	// conns are the bound sockets, one per address; set under l.mu.
	conns     []*net.UDPConn
	closeOnce sync.Once
}

// IsUDP reports whether the listener is a UDP listener.
func (l *Listener) IsUDP() bool { return l.udp != nil }

// AddressKey names a listening address for clash checks: host:port, with
// "/udp" for a UDP one, since a TCP and a UDP listener may share a port.
func AddressKey(sa *corev3.SocketAddress, udp bool) string {
	if udp {
		return AddressString(sa) + "/udp"
	}
	return AddressString(sa)
}

// isUDP reports whether a is a UDP address.
func (a socketAddress) isUDP() bool { return strings.HasPrefix(a.network, "udp") }

// buildUDP builds the UDP side of a listener whose address is UDP: its
// UDP listener filters and socket settings. Fields that only mean
// something for TCP connections are refused with their path, as Envoy
// refuses filter chains on a raw UDP listener.
func (l *Listener) buildUDP(lc *listenerv3.Listener, deps Deps) []error {
	u := &udpListener{maxDatagram: udpfilter.DefaultMaxDatagramSize}
	l.udp = u
	var errs []error
	for i, a := range l.addrs[1:] {
		if !a.isUDP() {
			errs = append(errs, fmt.Errorf("additional_addresses[%d].address.socket_address.protocol: a UDP listener's addresses must all be UDP", i))
		}
	}
	if len(lc.GetFilterChains()) > 0 {
		errs = append(errs, errors.New("filter_chains: a UDP listener takes no filter chains; its listener_filters (envoy.filters.udp_listener.udp_proxy, envoy.filters.udp.dns_filter) handle datagrams"))
	}
	if lc.GetDefaultFilterChain() != nil {
		errs = append(errs, errors.New("default_filter_chain: a UDP listener takes no filter chains; its listener_filters (envoy.filters.udp_listener.udp_proxy, envoy.filters.udp.dns_filter) handle datagrams"))
	}
	if lc.GetUseOriginalDst().GetValue() {
		errs = append(errs, errors.New("use_original_dst: not supported on a UDP listener"))
	}
	if !l.bindToPort {
		errs = append(errs, errors.New("bind_to_port: a UDP listener must bind its port"))
	}
	// What only means something for TCP connections.
	for _, f := range []struct {
		set   bool
		field string
	}{
		{lc.GetPerConnectionBufferLimitBytes() != nil, "per_connection_buffer_limit_bytes"},
		{lc.GetListenerFiltersTimeout() != nil, "listener_filters_timeout"},
		{lc.GetContinueOnListenerFiltersTimeout(), "continue_on_listener_filters_timeout"},
		{lc.GetConnectionBalanceConfig() != nil, "connection_balance_config"},
		{lc.GetIgnoreGlobalConnLimit(), "ignore_global_conn_limit"},
	} {
		if f.set {
			errs = append(errs, fmt.Errorf("%s: not supported on a UDP listener (it has no connections)", f.field))
		}
	}
	if uc := lc.GetUdpListenerConfig(); uc != nil {
		if sc := uc.GetDownstreamSocketConfig(); sc != nil {
			n, err := udpfilter.CompileSocketConfig(sc)
			if err != nil {
				errs = append(errs, PrefixErrors("udp_listener_config.downstream_socket_config.", err)...)
			}
			u.maxDatagram = n
		}
		if uc.GetQuicOptions() != nil {
			errs = append(errs, errors.New("udp_listener_config.quic_options: not supported by Outrigger (no QUIC listeners)"))
		}
		if uc.GetUdpPacketPacketWriterConfig() != nil {
			errs = append(errs, errors.New("udp_listener_config.udp_packet_packet_writer_config: not supported by Outrigger"))
		}
	}
	if len(lc.GetListenerFilters()) == 0 {
		errs = append(errs, errors.New("listener_filters: a UDP listener needs a UDP listener filter (envoy.filters.udp_listener.udp_proxy or envoy.filters.udp.dns_filter)"))
	}
	for i, f := range lc.GetListenerFilters() {
		path := fmt.Sprintf("listener_filters[%d].", i)
		if deps.BuildUDPFilter == nil {
			errs = append(errs, fmt.Errorf("%sname: UDP listener filters are not supported here", path))
			continue
		}
		if f.GetFilterDisabled() != nil {
			// Envoy's UDP listener filters take no predicate either.
			errs = append(errs, fmt.Errorf("%sfilter_disabled: not supported on a UDP listener's filters", path))
			continue
		}
		uf, err := deps.BuildUDPFilter(f)
		if err != nil {
			errs = append(errs, PrefixErrors(path, err)...)
			continue
		}
		u.filters = append(u.filters, uf)
	}
	return errs
}

// closeUDPFilters closes the UDP listener filters, once: their sessions
// end with the listener, as Envoy's do.
func (u *udpListener) closeUDPFilters() {
	u.closeOnce.Do(func() {
		for _, f := range u.filters {
			_ = f.Close()
		}
	})
}

// CloseUDPFilters closes the UDP listener filters of a UDP listener (their
// sessions end); nothing for a TCP listener.
func (l *Listener) CloseUDPFilters() {
	if l.udp != nil {
		l.udp.closeUDPFilters()
	}
}

// ShutdownUDP closes the UDP listener filters and waits, until ctx ends at
// the latest, for them to be done; nothing for a TCP listener.
func (l *Listener) ShutdownUDP(ctx context.Context) error {
	if l.udp == nil {
		return nil
	}
	l.udp.closeUDPFilters()
	var errs []error
	for _, f := range l.udp.filters {
		errs = append(errs, f.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// bindUDP opens one socket per address, with the listener's socket_options,
// freebind and transparent, and SO_REUSEPORT when reuse_port is on (so that an updated
// listener binds its port beside the one it replaces). l.mu is held.
func (l *Listener) bindUDP() error {
	var conns []*net.UDPConn
	for i, a := range l.addrs {
		opts, err := l.bindOptions(i, a)
		if err != nil {
			closeUDPConns(conns)
			return err
		}
		c, err := listenUDP(a, l.reusePort, opts)
		if err != nil {
			closeUDPConns(conns)
			return fmt.Errorf("listener %q: cannot bind %s/udp: %w", l.name, a, err)
		}
		conns = append(conns, c)
	}
	l.udp.conns = conns
	// sockets marks the listener bound for Serve and BindFrom; a UDP
	// listener has no stream sockets.
	l.sockets = make([][]net.Listener, len(l.addrs))
	for _, c := range conns {
		l.bound = append(l.bound, c.LocalAddr())
	}
	return nil
}

// closeUDPConns closes sockets bound so far.
func closeUDPConns(conns []*net.UDPConn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// listenUDP binds one UDP socket on a.
func listenUDP(a socketAddress, reusePort bool, opts sockopt.Set) (*net.UDPConn, error) {
	var lc net.ListenConfig
	switch {
	case reusePort && len(opts) > 0:
		lc.Control = sockopt.Chain(setReusePort, opts.Control)
	case reusePort:
		lc.Control = setReusePort
	case len(opts) > 0:
		lc.Control = opts.Control
	}
	pc, err := lc.ListenPacket(context.Background(), a.network, a.String())
	if err != nil {
		return nil, err
	}
	c, ok := pc.(*net.UDPConn)
	if !ok {
		_ = pc.Close()
		return nil, fmt.Errorf("not a UDP socket: %T", pc)
	}
	return c, nil
}

// serveUDP reads every socket until the listener stops. l.mu is held on
// entry and released.
func (l *Listener) serveUDP() {
	l.serving = true
	var wg sync.WaitGroup
	for _, c := range l.udp.conns {
		wg.Go(func() { l.readUDP(c) })
	}
	l.manager.ListenerCreateSuccess.Add(uint64(l.workers))
	l.mu.Unlock()
	wg.Wait()
	close(l.done)
}

// udpSocket is a listener socket as UDP filters write to it.
type udpSocket struct{ c *net.UDPConn }

func (s udpSocket) WriteTo(b []byte, peer netip.AddrPort) error {
	_, err := s.c.WriteToUDPAddrPort(b, peer)
	return err
}

// readUDP hands each datagram of c to the UDP listener filters, in order,
// until the socket closes. Read errors are told to the filters and retried
// with a growing delay; they never end the listener.
func (l *Listener) readUDP(c *net.UDPConn) {
	u := l.udp
	local := addrPort(c.LocalAddr())
	sock := udpSocket{c: c}
	// One more byte than the largest datagram tells a truncated one.
	buf := make([]byte, u.maxDatagram+1)
	var delay time.Duration
	for {
		n, peer, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || l.Stopped() {
				return
			}
			for _, f := range u.filters {
				f.OnReceiveError()
			}
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			select {
			case <-time.After(delay):
			case <-l.stopCh:
				return
			}
			continue
		}
		delay = 0
		if n > u.maxDatagram {
			u.dropped.Inc()
			continue
		}
		d := udpfilter.Datagram{
			Socket: sock,
			Local:  local,
			Peer:   netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port()),
			Data:   buf[:n],
		}
		for _, f := range u.filters {
			f.OnDatagram(d)
		}
	}
}

// stopUDP closes the sockets and the filters of a UDP listener. l.mu is
// held.
func (l *Listener) stopUDP() {
	for _, c := range l.udp.conns {
		_ = c.Close()
	}
	l.udp.closeUDPFilters()
}

// udpNetwork turns a TCP network name into its UDP one.
func udpNetwork(tcp string) string { return "udp" + strings.TrimPrefix(tcp, "tcp") }
