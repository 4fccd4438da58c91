package udpproxy

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// session is one client's flow to one upstream host.
type session struct {
	p       *Proxy
	key     sessionKey
	cluster udpfilter.Cluster
	cs      *clusterStats
	host    *upstream.Host
	down    udpfilter.Socket
	// hostsVersion is the cluster's HostsVersion when the session last
	// checked that its host is still in the cluster.
	hostsVersion any
	id           uint64
	start        time.Time
	// mono is start on the real clock; lastActive is when a datagram last
	// went either way, as nanoseconds since mono.
	mono       time.Time
	lastActive atomic.Int64
	idle       *time.Timer

	// up is the session's connected upstream socket; nil when it could
	// not be made (every datagram upstream then fails).
	up *net.UDPConn
	// filters are the session's session_filters.
	filters []udpfilter.SessionFilter
	// tun is the session's HTTP/2 tunnel with tunneling_config (then up
	// and host are nil: the tunnel picks its host).
	tun *tunnel

	// The session's own counts, for its access log entry.
	rxBytes, txBytes         atomic.Uint64
	rxDatagrams, txDatagrams atomic.Uint64
	txErrors                 atomic.Uint64

	// flush is the periodic access log timer, nil without
	// access_log_flush_interval; ended (under flushMu) stops it for good,
	// so that no periodic entry follows the session's last one.
	flush   *time.Timer
	flushMu sync.Mutex
	ended   bool

	endOnce sync.Once
}

// newSession starts a session for key to h, or to a host the cluster's
// load balancer picks when h is nil. It returns nil, as Envoy drops the
// datagram, when the cluster's max_connections circuit breaker is open
// (upstream_cx_overflow), no host can take it (upstream_cx_none_healthy)
// or the proxy is closed.
func (p *Proxy) newSession(cl udpfilter.Cluster, key sessionKey, h *upstream.Host, down udpfilter.Socket) *session {
	version := cl.HostsVersion() // before the pick: a change after it is seen later
	if !cl.AcquireSession() {
		return nil
	}
	var tc tunnelCluster
	if p.cfg.tunnel != nil {
		// As Envoy, a tunnel's host is picked when it connects.
		var ok bool
		if tc, ok = cl.(tunnelCluster); !ok {
			cl.ReleaseSession()
			return nil
		}
	} else if h == nil {
		if h = cl.PickHost(p.pickContext(key.peer)); h == nil {
			cl.ReleaseSession()
			return nil
		}
	}
	s := &session{
		p: p, key: key, cluster: cl, cs: p.clusterStats(cl), host: h, down: down,
		hostsVersion: version, id: p.ids.Add(1), start: p.now(), mono: time.Now(),
		filters: p.newSessionFilters(),
	}
	if tc != nil {
		s.tun = newTunnel(s, tc)
	} else if ap, err := netip.ParseAddrPort(h.Address); err == nil {
		// Connected, as Envoy connects its upstream sockets: the kernel
		// then only passes on the host's datagrams.
		if c, err := p.dialUpstream(key.peer, ap); err == nil {
			s.up = c
		} else {
			p.log.V(1).Info("udp proxy: cannot open an upstream socket", "host", h.Address, "error", err.Error())
		}
	}
	s.idle = time.AfterFunc(p.cfg.idleTimeout, s.checkIdle)
	if p.cfg.flushInterval > 0 && p.logs != nil {
		s.flush = time.AfterFunc(p.cfg.flushInterval, s.logPeriodic)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.idle.Stop()
		s.stopFlush()
		if s.up != nil {
			_ = s.up.Close()
		}
		if s.tun != nil {
			s.tun.close()
		}
		cl.ReleaseSession()
		return nil
	}
	p.sessions[key] = s
	p.stats.sessTotal.Inc()
	p.stats.sessActive.Inc()
	if s.up != nil || s.tun != nil {
		p.readers.Add(1)
	}
	p.mu.Unlock()
	if s.tun != nil {
		p.log.V(1).Info("udp proxy: new tunneled session", "downstream", key.peer.String(), "local", key.local.String(), "cluster", cl.Name())
		go s.tun.run()
		return s
	}
	p.log.V(1).Info("udp proxy: new session", "downstream", key.peer.String(), "local", key.local.String(), "upstream", h.Address)
	if s.up != nil {
		go s.readUpstream()
	}
	return s
}

// dialUpstream opens a session's socket to host, connected. With
// use_original_src_ip it is bound to the client's IP address (port 0: the
// client's port is not kept, as in Envoy) with IP_TRANSPARENT, so that the
// host sees the client's address; the host's answers then come back only
// where the routing brings them to the proxy.
func (p *Proxy) dialUpstream(peer, host netip.AddrPort) (*net.UDPConn, error) {
	if !p.cfg.originalSrc {
		return net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(host))
	}
	src := peer.Addr().Unmap()
	opt, err := sockopt.Transparent(src.Is6())
	if err != nil {
		return nil, err
	}
	d := net.Dialer{LocalAddr: &net.UDPAddr{IP: src.AsSlice()}, Control: sockopt.Set{opt}.Control}
	c, err := d.Dial("udp", net.UDPAddrFromAddrPort(host).String())
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}

// touch records activity, which pushes the idle timeout back.
func (s *session) touch() { s.lastActive.Store(int64(time.Since(s.mono))) }

// checkIdle ends the session once idle_timeout has passed without a
// datagram, or waits for the rest of it.
func (s *session) checkIdle() {
	p := s.p
	p.mu.Lock()
	idle := time.Since(s.mono) - time.Duration(s.lastActive.Load())
	if left := p.cfg.idleTimeout - idle; left > 0 {
		p.mu.Unlock()
		s.idle.Reset(left)
		return
	}
	if p.sessions[s.key] == s {
		delete(p.sessions, s.key)
	}
	p.mu.Unlock()
	p.log.V(1).Info("udp proxy: session idle timeout", "downstream", s.key.peer.String(), "local", s.key.local.String())
	p.stats.idleTimeout.Inc()
	s.end()
}

// fromDownstream sends one datagram of the client to the host.
func (s *session) fromDownstream(b []byte) {
	n := uint64(len(b))
	p := s.p
	s.rxBytes.Add(n)
	s.rxDatagrams.Add(1)
	p.rx.Add(n)
	p.stats.rxBytes.Add(n)
	p.stats.rxDatagrams.Inc()
	s.touch()
	if s.filters != nil {
		var ok bool
		if b, ok = s.filterDown(b); !ok {
			return
		}
		// The cluster counts what it is sent.
		n = uint64(len(b))
	}
	if s.tun != nil {
		// The tunnel's connection counts its bytes.
		s.tun.send(b)
		return
	}
	if s.up == nil {
		s.cs.txErrors.Inc()
		return
	}
	if _, err := s.up.Write(b); err != nil {
		s.cs.txErrors.Inc()
		return
	}
	s.cs.txDatagrams.Inc()
	s.cs.txBytesTotal.Add(n)
}

// readUpstream sends the host's datagrams to the client, from the
// listener's socket, until the session ends.
func (s *session) readUpstream() {
	defer s.p.readers.Done()
	// One more byte than the largest datagram tells a truncated one.
	buf := make([]byte, s.p.cfg.maxDatagram+1)
	for {
		n, err := s.up.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// An ICMP error for an earlier datagram (the host's port is
			// closed) and the like: counted, and reading goes on.
			s.cs.rxErrors.Inc()
			continue
		}
		if n > s.p.cfg.maxDatagram {
			s.cs.rxDatagramsDropped.Inc()
			continue
		}
		s.cs.rxDatagrams.Inc()
		s.cs.rxBytesTotal.Add(uint64(n))
		s.touch()
		if s.filters == nil {
			s.toDownstream(buf[:n])
			continue
		}
		for _, d := range s.filterUp(buf[:n]) {
			s.toDownstream(d)
		}
	}
}

// toDownstream sends one datagram of the host to the client.
func (s *session) toDownstream(b []byte) {
	p := s.p
	n := uint64(len(b))
	s.txBytes.Add(n)
	p.tx.Add(n)
	if err := s.down.WriteTo(b, s.key.peer); err != nil {
		s.txErrors.Add(1)
		p.stats.txErrors.Inc()
		return
	}
	s.txDatagrams.Add(1)
	p.stats.txBytes.Add(n)
	p.stats.txDatagrams.Inc()
}

// end closes the session once: its socket, its circuit breaker unit, its
// gauge, and logs it.
func (s *session) end() {
	s.endOnce.Do(func() {
		s.idle.Stop()
		s.stopFlush()
		if s.up != nil {
			_ = s.up.Close()
		}
		if s.tun != nil {
			s.tun.close()
		}
		s.p.stats.sessActive.Dec()
		s.cluster.ReleaseSession()
		s.logEntry(datav3.AccessLogType_UdpSessionEnd)
	})
}

// stopFlush stops the periodic access log for good.
func (s *session) stopFlush() {
	if s.flush == nil {
		return
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.ended = true
	s.flush.Stop()
}
