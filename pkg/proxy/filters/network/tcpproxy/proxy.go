package tcpproxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// maxChunk is the largest read of one direction of a connection: as much
// as one read usually returns on loopback, and what io.Copy uses.
const maxChunk = 32 << 10

// Proxy is a compiled TcpProxy: the terminal network filter of its filter
// chain. It is safe for concurrent use; each connection runs in the
// goroutine of HandleConn, plus one more or on an event loop.
type Proxy struct {
	cfg      *config
	logs     netfilter.AccessLogger
	stats    *proxyStats
	store    *stats.Store
	clusters netfilter.Clusters
	// onDemand discovers a missing cluster; nil without on_demand.
	onDemand *onDemand
	log      logr.Logger
	now      func() time.Time
	// drain is the listener's drain, nil for none.
	drain netfilter.Drainer

	// bufs recycles the maxChunk buffers of the directions.
	bufs sync.Pool
	// loops relay plain TCP connections where the platform has them;
	// they stop once the proxy is closed and idle.
	loops evloops
	// connIDs numbers downstream connections (%CONNECTION_ID%).
	connIDs atomic.Uint64
	// exceeded holds each cluster's upstream_cx_connect_attempts_exceeded
	// counter, by stat scope name.
	exceeded sync.Map

	// ctx ends with Shutdown: connection attempts stop then.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[*session]struct{}
	closing  bool
	// idle is closed once closing is set and no connection is left.
	idle     chan struct{}
	idleOnce sync.Once
	logsOnce sync.Once
}

var _ netfilter.Terminal = (*Proxy)(nil)

// newProxy builds the filter of a compiled configuration.
func newProxy(c *config, logs netfilter.AccessLogger, ctx netfilter.Context) *Proxy {
	now := ctx.Now
	if now == nil {
		now = time.Now
	}
	p := &Proxy{
		cfg:      c,
		logs:     logs,
		stats:    newProxyStats(ctx.Stats, c.statPrefix),
		store:    ctx.Stats,
		clusters: ctx.Clusters,
		log:      ctx.Log,
		now:      now,
		drain:    ctx.Drain,
		sessions: map[*session]struct{}{},
		idle:     make(chan struct{}),
	}
	p.bufs.New = func() any { b := make([]byte, maxChunk); return &b }
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// HandleConn proxies one downstream connection until both of its sides
// have ended; it implements netfilter.Terminal and always closes c.
func (p *Proxy) HandleConn(c net.Conn) {
	p.stats.cxTotal.Inc()
	s := p.register(c)
	if s == nil {
		_ = c.Close()
		return
	}
	defer p.unregister(s)
	// Envoy's tcp_proxy works on the connection's stream info: the
	// listener's access logs see what it records.
	s.streamInfo = netfilter.SetStreamInfo(c, s)
	defer func() {
		// A bug must cost one connection, not the proxy.
		if r := recover(); r != nil {
			p.log.Error(fmt.Errorf("panic: %v", r), "tcp proxy session panicked", "stack", string(debug.Stack()))
			s.closeBoth()
		}
	}()
	s.run()
}

var _ netfilter.RefusalRecorder = (*Proxy)(nil)

// Refused counts and logs a connection an earlier filter of the chain
// closed (a connection limit): in downstream_cx_total, and with an access
// log entry (TcpConnectionEnd, the refusal's response flags, no
// upstream), as Envoy's tcp_proxy, made for every connection of its
// chain, counts and logs it. It implements netfilter.RefusalRecorder.
func (p *Proxy) Refused(c net.Conn, r *netfilter.Refusal) {
	p.stats.cxTotal.Inc()
	p.log.V(1).Info("connection closed before tcp_proxy", "reason", r.Reason, "remote", accesslog.AddressString(c.RemoteAddr()))
	if p.logs.Empty() {
		return
	}
	s := newSession(p, c)
	if st, ok := c.(interface{ StartTime() time.Time }); ok {
		s.start = st.StartTime()
	}
	s.setFlag(r.Flags)
	s.logEntry(datav3.AccessLogType_TcpConnectionEnd)
}

// register tracks a new connection, or returns nil once the proxy is
// closing.
func (p *Proxy) register(c net.Conn) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return nil
	}
	s := newSession(p, c)
	p.sessions[s] = struct{}{}
	return s
}

// unregister forgets a finished connection.
func (p *Proxy) unregister(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sessions, s)
	if p.closing && len(p.sessions) == 0 {
		p.becomeIdle()
	}
}

// becomeIdle marks the closed proxy idle (no connection left), once.
func (p *Proxy) becomeIdle() {
	p.idleOnce.Do(func() {
		close(p.idle)
		p.loops.stop()
	})
}

// Close stops taking connections and returns at once; the open ones go
// on (a TCP stream has no point where it could end early on its own):
// Shutdown closes them, as Envoy closes a removed listener's connections
// at the end of its drain time and every connection when it exits.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return nil
	}
	p.closing = true
	if len(p.sessions) == 0 {
		p.becomeIdle()
	}
	// The access loggers close once the last connection has logged.
	go func() {
		<-p.idle
		p.closeLogs()
	}()
	return nil
}

// closeLogs closes the access loggers, delivering what they buffer, once.
func (p *Proxy) closeLogs() {
	p.logsOnce.Do(func() {
		if err := p.logs.Close(); err != nil {
			p.log.V(1).Info("closing access logs", "error", err.Error())
		}
	})
}

// Shutdown closes the proxy, closes every connection it proxies and waits,
// until ctx ends at the latest, for their sessions to finish (they log
// their access log entries); then it closes the access loggers.
func (p *Proxy) Shutdown(ctx context.Context) error {
	_ = p.Close()
	p.cancel()
	p.mu.Lock()
	for s := range p.sessions {
		s.closeBoth()
	}
	p.mu.Unlock()
	var err error
	select {
	case <-p.idle:
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.closeLogs()
	return err
}

// ActiveConnections returns the number of connections being proxied.
func (p *Proxy) ActiveConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// pickCluster returns the cluster of a new connection: the one its filter
// state names (envoy.tcp_proxy.cluster, which sni_cluster sets), else the
// cluster, or one of the weighted clusters drawn by weight; and the
// metadata_match criteria that choose its subset (a weighted cluster's,
// else the filter's, as Envoy's).
func (p *Proxy) pickCluster(down net.Conn) (string, *upstream.MetadataMatch) {
	c := p.cfg
	if v, ok := netfilter.FilterStateOf(down, netfilter.ClusterStateKey); ok {
		if name, _ := filterstate.StringOf(v); name != "" {
			return name, c.metadataMatch
		}
	}
	if len(c.weighted) == 0 {
		return c.cluster, c.metadataMatch
	}
	r := rand.Uint64N(c.totalWeight)
	for _, w := range c.weighted {
		if r < w.weight {
			return w.name, w.metadataMatch
		}
		r -= w.weight
	}
	last := &c.weighted[len(c.weighted)-1]
	return last.name, last.metadataMatch
}

// attemptsExceeded returns the upstream_cx_connect_attempts_exceeded
// counter of a cluster.
func (p *Proxy) attemptsExceeded(cl netfilter.Cluster) *stats.Counter {
	name := cl.ObservabilityName()
	if v, ok := p.exceeded.Load(name); ok {
		return v.(*stats.Counter)
	}
	c := p.store.Scope("cluster." + name + ".").Counter("upstream_cx_connect_attempts_exceeded")
	p.exceeded.Store(name, c)
	return c
}

// getBuf returns a buffer for one direction of a connection whose buffer
// limit is limit (0: unknown).
func (p *Proxy) getBuf(limit uint32) (buf []byte, put func()) {
	if limit == 0 || limit >= maxChunk {
		b := p.bufs.Get().(*[]byte)
		return *b, func() { p.bufs.Put(b) }
	}
	return make([]byte, limit), func() {}
}
