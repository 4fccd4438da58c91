package udpproxy

import (
	"context"
	"fmt"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Proxy is a compiled UdpProxyConfig: the filter of one UDP listener. It
// is safe for concurrent use: datagrams arrive on the listener sockets'
// read goroutines, each session reads its upstream socket on one more.
type Proxy struct {
	cfg *config
	// logs are access_log (per session), proxyLogs proxy_access_log (once,
	// when the filter ends); nil for none.
	logs, proxyLogs netfilter.AccessLogger
	stats           *proxyStats
	store           *stats.Store
	clusters        udpfilter.Clusters
	log             logr.Logger
	now             func() time.Time
	start           time.Time

	// byCluster holds each cluster's stats, by stat scope name.
	byCluster sync.Map
	// ids numbers sessions (%CONNECTION_ID%).
	ids atomic.Uint64
	// rx and tx are the bytes of every session, for the proxy access log.
	rx, tx atomic.Uint64
	// readers counts the sessions' upstream read goroutines.
	readers sync.WaitGroup

	mu       sync.Mutex
	sessions map[sessionKey]*session
	closed   bool
}

var _ udpfilter.Filter = (*Proxy)(nil)

// sessionKey identifies a session: the listener address and the client's
// (Envoy's 4-tuple), plus the host with per-packet load balancing.
type sessionKey struct {
	local, peer netip.AddrPort
	host        string
}

// newProxy builds the filter of a compiled configuration.
func newProxy(c *config, logs, proxyLogs netfilter.AccessLogger, ctx udpfilter.Context) *Proxy {
	now := ctx.Now
	if now == nil {
		now = time.Now
	}
	p := &Proxy{
		cfg:       c,
		logs:      logs,
		proxyLogs: proxyLogs,
		stats:     newProxyStats(ctx.Stats, c.statPrefix),
		store:     ctx.Stats,
		clusters:  ctx.Clusters,
		log:       ctx.Log,
		now:       now,
		start:     now(),
		sessions:  map[sessionKey]*session{},
	}
	// Envoy attaches to each configured cluster that exists when the
	// filter is made, which creates its udp.* stats.
	if p.clusters != nil {
		for name := range c.clusters {
			if cl := p.clusters.Cluster(name); cl != nil {
				p.clusterStats(cl)
			}
		}
	}
	return p
}

// clusterStats returns the stats of a cluster, made on first use.
func (p *Proxy) clusterStats(cl udpfilter.Cluster) *clusterStats {
	name := cl.ObservabilityName()
	if v, ok := p.byCluster.Load(name); ok {
		return v.(*clusterStats)
	}
	v, _ := p.byCluster.LoadOrStore(name, newClusterStats(p.store, name))
	return v.(*clusterStats)
}

// route is the cluster name of a datagram, "" for none.
func (p *Proxy) route(a addresses) string {
	if p.cfg.matcher == nil {
		return p.cfg.cluster
	}
	c, _ := p.cfg.matcher.Match(a)
	return c
}

// OnDatagram routes one datagram from a client to its session, making the
// session first when there is none. It implements udpfilter.Filter.
func (p *Proxy) OnDatagram(d udpfilter.Datagram) {
	defer func() {
		// A bug must cost one datagram, not the listener.
		if r := recover(); r != nil {
			p.log.Error(fmt.Errorf("panic: %v", r), "udp proxy panicked", "stack", string(debug.Stack()))
		}
	}()
	var cl udpfilter.Cluster
	if name := p.route(addresses{local: d.Local, peer: d.Peer}); name != "" && p.clusters != nil {
		cl = p.clusters.Cluster(name)
	}
	if cl == nil {
		p.stats.noRoute.Inc()
		return
	}
	key := sessionKey{local: d.Local, peer: d.Peer}
	var s *session
	if p.cfg.perPacket {
		// A host per datagram: the session is the client's with that
		// host.
		h := cl.PickHost(p.pickContext(d.Peer))
		if h == nil {
			return
		}
		key.host = h.Address
		if s = p.lookup(key, cl); s == nil {
			s = p.newSession(cl, key, h, d.Socket)
		}
	} else {
		s = p.lookup(key, cl)
		if s != nil && s.hostGone() {
			// As Envoy: the sessions of a host removed from its cluster
			// end; the datagram starts a new one.
			p.remove(s)
			s = nil
		}
		if s != nil && s.host != nil && !usable(s.host) {
			// As Envoy: a session whose host became unhealthy moves to a
			// healthy host when the balancer has another one.
			if h := cl.PickHost(p.pickContext(d.Peer)); h != nil && usable(h) && h != s.host {
				p.remove(s)
				s = p.newSession(cl, key, h, d.Socket)
			}
		} else if s == nil {
			s = p.newSession(cl, key, nil, d.Socket)
		}
	}
	if s != nil {
		s.fromDownstream(d.Data)
	}
}

// hostGone reports whether the session's host has left its cluster. It
// looks at the cluster's hosts only when they changed since it last did;
// it runs on the goroutine of the session's datagrams.
func (s *session) hostGone() bool {
	if s.host == nil {
		// A tunneled session: as Envoy's, not tied to a host.
		return false
	}
	v := s.cluster.HostsVersion()
	if v == s.hostsVersion {
		return false
	}
	s.hostsVersion = v
	return !s.cluster.HasHost(s.host.Address)
}

// usable reports whether a host is not unhealthy (Envoy's coarse health:
// a degraded host still serves its sessions).
func usable(h *upstream.Host) bool { return h.Healthy() || h.Degraded() }

// pickContext is what the cluster's load balancer may read of a new
// session: the hash_policies' hash key.
func (p *Proxy) pickContext(peer netip.AddrPort) *upstream.PickContext {
	pc := &upstream.PickContext{}
	pc.Hash, pc.HasHash = p.cfg.hash.of(peer)
	return pc
}

// lookup returns the live session of key, nil for none. A session of a
// cluster that was since replaced (a CDS update) ends: the new cluster
// gets a new session, as Envoy's sessions end with their cluster.
func (p *Proxy) lookup(key sessionKey, cl udpfilter.Cluster) *session {
	p.mu.Lock()
	s := p.sessions[key]
	if s != nil {
		// Under the lock the idle check takes too: a session found here
		// is not ended as idle before this datagram is through.
		s.touch()
	}
	p.mu.Unlock()
	if s != nil && s.cluster != cl {
		p.remove(s)
		return nil
	}
	return s
}

// remove ends a session and forgets it.
func (p *Proxy) remove(s *session) {
	p.mu.Lock()
	if p.sessions[s.key] == s {
		delete(p.sessions, s.key)
	}
	p.mu.Unlock()
	s.end()
}

// OnReceiveError counts a failed read of the listener's socket
// (downstream_sess_rx_errors). It implements udpfilter.Filter.
func (p *Proxy) OnReceiveError() { p.stats.rxErrors.Inc() }

// Close ends every session (each logs its access log entry), logs the
// proxy access log and closes the loggers, once; no session starts
// afterwards. Envoy's sessions end with their listener in the same way.
// It implements udpfilter.Filter.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	all := make([]*session, 0, len(p.sessions))
	for _, s := range p.sessions {
		all = append(all, s)
	}
	clear(p.sessions)
	p.mu.Unlock()
	for _, s := range all {
		s.end()
	}
	p.logProxy()
	for _, l := range []netfilter.AccessLogger{p.logs, p.proxyLogs} {
		if l == nil {
			continue
		}
		if err := l.Close(); err != nil {
			p.log.V(1).Info("closing access logs", "error", err.Error())
		}
	}
	return nil
}

// Shutdown closes the proxy and waits, until ctx ends at the latest, for
// the sessions' upstream readers to finish. It implements
// udpfilter.Filter.
func (p *Proxy) Shutdown(ctx context.Context) error {
	return udpfilter.CloseAndWait(ctx, p, &p.readers)
}

// ActiveSessions returns the number of live sessions.
func (p *Proxy) ActiveSessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}
