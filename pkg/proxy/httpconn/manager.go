// Package httpconn is the HTTP connection manager: the network filter that
// speaks HTTP on downstream connections, runs the HTTP filters
// (health_check, router) on each request, and proxies it to an upstream
// cluster or answers it locally.
//
// HTTP/1 runs on the proxy's own codec (package http1) with one goroutine
// per downstream connection: it reads a request, routes it, borrows an
// upstream connection, streams the request and the response through
// pooled buffers, gives the connection back and reads the next request,
// with no hand-off to other goroutines and no allocation on the steady
// path. HTTP/2 with prior knowledge (h2c) is detected on AUTO listeners
// and served by the proxy's own framing (h2conn.go): the connection's
// goroutine reads frames, each stream runs in a goroutine of its own
// through the same filters and router, and the responses of streams that
// finish together leave in one write.
package httpconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"

	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// readBufferSize is the downstream read buffer of each HTTP/1 connection:
// a request head and a small body fit in one read.
const readBufferSize = 8 << 10

// Manager serves HTTP on the connections handed to it. It is safe for
// concurrent use; each connection runs in the goroutine of HandleConn.
type Manager struct {
	cfg settings
	// proxyStatus is proxy_status_config, nil without it.
	proxyStatus *proxyStatus
	// routeResolution is record_route_resolution_stats' histograms, nil
	// without it.
	routeResolution *routeResolutionStats
	// rt is the route table with its route-level stats: fixed for an
	// inline route_config, swapped whole by route discovery (SetRoutes).
	// A request reads it once (stream.routes) and keeps what it read,
	// with a reference (see routeState).
	rt atomic.Pointer[routeState]
	// routeFilter compiles this manager's per-route filter
	// configurations.
	routeFilter routeFilterFunc
	// clusterSpecifiers compiles its route configurations' cluster
	// specifier plugins.
	clusterSpecifiers clusterSpecifierFunc
	filters           filterChain
	logs              loggers.List
	// uplog is the router's upstream_log; nil without (see uplog.go).
	uplog *upstreamLogs
	// upgradeFilters are the upgrade types' own filter chains
	// (upgrade_configs[].filters).
	upgradeFilters upgradeChains
	// replies is local_reply_config; nil without one.
	replies *localReplies
	// tracing is the connection manager's tracing; nil without.
	tracing *tracingConfig
	upConn  bool // a log, reply or span format shows the upstream connection (readsUpstreamConn)
	stats   *hcmStats
	deps    Deps
	log     logr.Logger
	// debug and routerDebug skip the per-request debug records of log
	// and deps.RouterLog with one load of their levels.
	debug, routerDebug logging.Gate
	// clock is Deps.Now: nil means the real clock, read once per step
	// and shared between deadlines and recorded times (see stamp).
	clock func() time.Time
	date  dateCache

	// readers recycles read buffers and exchanges the state of HTTP/1
	// requests, between connections and while connections wait for
	// their next request (see park.go).
	readers, exchanges sync.Pool
	// idlers holds the HTTP/1 connections idle for a while, with no
	// goroutine (see idleset.go); sweeping is set while the sweep that
	// moves them there is scheduled.
	idlers   idleSet
	sweeping atomic.Bool
	sweep    *time.Timer
	// movedSinceRelease and lastRelease pace the release of the memory
	// connections leave as they move (releaseAfterBurst); mu guards them.
	movedSinceRelease int
	lastRelease       time.Time
	// connIDs numbers downstream connections (%CONNECTION_ID%).
	connIDs atomic.Uint64

	// h2streams recycles the state of HTTP/2 streams.
	h2streams sync.Pool
	// h2CodecStats creates the HTTP/2 codec stats with the first HTTP/2
	// connection, as Envoy does.
	h2CodecStats func() *h2Stats
	// localIP is the address shadows add to x-forwarded-for.
	localIP localIP

	// ctx is cancelled when the manager is shut down for good; upstream
	// connection attempts of its requests stop then.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	conns   map[*serverConn]struct{}
	closing bool
	// closingSet mirrors closing for closingNow, which every response
	// asks: a load, not a lock every worker's requests would share.
	closingSet atomic.Bool
	// routesReleased: the manager no longer holds a route table
	// (releaseRoutes); routes set afterwards are released at once.
	routesReleased bool
	// idle is closed when closing is set and no connection is left.
	idle      chan struct{}
	idleOnce  sync.Once
	closeOnce sync.Once
	// logsOnce closes the access loggers, once the last request has
	// logged.
	logsOnce sync.Once
	closed   chan struct{}
}

// New builds a manager from its configuration. New starts nothing and opens
// only the access-log files, so a configuration can be checked without side
// effects beyond those. Errors name the field path below the
// http_connection_manager.
func New(cfg *hcmv3.HttpConnectionManager, deps Deps) (*Manager, error) {
	if deps.Stats == nil {
		return nil, errors.New("httpconn: Deps.Stats is required")
	}
	// Every part is built even when an earlier one fails, so that one run
	// reports all of the connection manager's problems.
	s, err := readSettings(cfg)
	errs := []error{err}
	var routes *routeState
	routeFilter := routeFilterConfigs(deps.Extensions, filterContext(s.statPrefix, deps), deps.Runtime)
	plugins := clusterspecifier.Compiler(deps.Extensions, clusterspecifier.Context{Log: deps.RouterLog})
	switch rc := cfg.GetRouteConfig(); {
	case rc != nil:
		if routes, err = compileRoutes(rc, routeFilter, plugins, deps.Stats, deps.Extensions); err != nil {
			errs = append(errs, fieldpath.Prefix("route_config.", err))
		}
	case cfg.GetRds() != nil:
		// Route discovery: no route until the first configuration
		// arrives (the listener warms meanwhile), then SetRoutes.
		routes, err = compileRoutes(&routev3.RouteConfiguration{}, routeFilter, plugins, deps.Stats, deps.Extensions)
		errs = append(errs, err)
	case cfg.GetScopedRoutes() != nil:
		errs = append(errs, errors.New("route_specifier: scoped_routes is not supported by Outrigger"))
	default:
		errs = append(errs, errors.New("route_specifier: an inline route_config is required"))
	}
	fctx := filterContext(s.statPrefix, deps)
	filters, err := buildFilters("http_filters", cfg.GetHttpFilters(), deps.Extensions, fctx, deps.Runtime)
	errs = append(errs, err)
	upgradeFilters, err := buildUpgradeFilters(cfg.GetUpgradeConfigs(), deps.Extensions, fctx, deps.Runtime)
	errs = append(errs, err)
	logs, err := buildAccessLogs(cfg.GetAccessLog(), deps)
	errs = append(errs, err)
	uplog, err := buildUpstreamLogs(cfg, &filters, deps)
	errs = append(errs, err)
	replies, err := readLocalReplies(cfg.GetLocalReplyConfig(), logfilter.Context{Runtime: deps.Runtime, Extensions: deps.Extensions, ByName: lookupByName(deps.Runtime)}, deps.Extensions)
	errs = append(errs, fieldpath.Prefix("local_reply_config.", err))
	tr, err := readTracing(cfg, deps)
	errs = append(errs, err)
	tr.withRouter(filters.startChildSpan)
	s.requestID, err = readRequestID(cfg, deps)
	errs = append(errs, err)
	s.ipDetection, err = readIPDetection(cfg, deps)
	errs = append(errs, err)
	s.earlyMutations, err = readEarlyMutations(cfg, deps)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		filters.close()
		upgradeFilters.close()
		if routes != nil {
			routes.release()
		}
		// The access loggers may hold gRPC channels already.
		_ = logs.Close()
		_ = uplog.close()
		return nil, err
	}
	m := &Manager{
		cfg:         s,
		filters:     filters,
		logs:        logs,
		uplog:       uplog,
		replies:     replies,
		tracing:     tr,
		stats:       newHCMStats(deps.Stats, s.statPrefix, deps.ListenerStatPrefix),
		deps:        deps,
		log:         deps.Log,
		debug:       logging.NewGate(deps.Log),
		routerDebug: logging.NewGate(deps.RouterLog),
		clock:       deps.Now,
		conns:       make(map[*serverConn]struct{}),
		idle:        make(chan struct{}),
		closed:      make(chan struct{}),
	}
	m.upgradeFilters = upgradeFilters
	if cfg.GetRecordRouteResolutionStats() {
		m.routeResolution = newRouteResolutionStats(deps.Stats, s.statPrefix)
	}
	m.proxyStatus = readProxyStatus(cfg.GetProxyStatusConfig(), deps.Tracing.Node.GetId(), s.serverName)
	m.upConn = logs.ReadsUpstreamConnection() || replies.readsUpstreamConnection() || tr.readsUpstreamConnection() || uplog.readsUpstreamConnection()
	m.routeFilter, m.clusterSpecifiers = routeFilter, plugins
	m.rt.Store(routes)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.readers.New = func() any { return bufio.NewReaderSize(nil, readBufferSize) }
	m.exchanges.New = func() any { return newH1Exchange() }
	m.h2streams.New = func() any { return newH2Stream(m) }
	m.sweep = time.AfterFunc(time.Hour, m.sweepIdle)
	m.sweep.Stop()
	m.h2CodecStats = sync.OnceValue(func() *h2Stats { return newH2Stats(deps.Stats) })
	return m, nil
}

// HandleConn serves one accepted connection; it implements
// listener.ConnHandler and always closes c. It returns when the connection
// ends, or earlier, when an idle HTTP/1 connection moves to the manager's
// idle set (see idleset.go): the goroutine the set starts when the
// connection's next bytes arrive serves it from then on, and ends it.
func (m *Manager) HandleConn(c net.Conn) {
	sc := m.register(c)
	if sc == nil {
		_ = c.Close()
		return
	}
	sc.guard(sc.serve)
}

// guard runs f, which serves the connection until it ends (and calls
// end) or moves to the idle set. A bug must cost one connection, not
// the proxy (net/http's server draws the same line): a panic closes the
// connection and ends it.
func (c *serverConn) guard(f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.m.log.Error(fmt.Errorf("panic: %v", r), "connection handler panicked", "stack", string(debug.Stack()))
			_ = c.nc.Close()
			c.end()
		}
	}()
	f()
}

var _ netfilter.RefusalRecorder = (*Manager)(nil)

// Refused counts a connection an earlier filter of the chain closed (a
// connection limit) the way Envoy's connection manager, made for every
// connection of its chain, counts it: opened, then destroyed locally. It
// implements netfilter.RefusalRecorder.
func (m *Manager) Refused(c net.Conn, r *netfilter.Refusal) {
	m.log.V(1).Info("connection closed before the connection manager", "reason", r.Reason, "remote", accesslog.AddressString(c.RemoteAddr()))
	st := m.stats
	st.cxTotal.Inc()
	st.cxDestroy.Inc()
	st.cxDestroyLocal.Inc()
	var length time.Duration
	if s, ok := c.(interface{ StartTime() time.Time }); ok {
		length = m.stamp(time.Now()).Sub(s.StartTime())
	}
	st.cxLengthMs.Record(uint64(max(0, length.Milliseconds())))
}

// register tracks a new connection, or returns nil once the manager is
// closing.
func (m *Manager) register(c net.Conn) *serverConn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil
	}
	sc := newServerConn(m, c)
	m.conns[sc] = struct{}{}
	return sc
}

// unregister forgets a finished connection.
func (m *Manager) unregister(sc *serverConn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conns, sc)
	if m.closing && len(m.conns) == 0 {
		m.idleOnce.Do(func() { close(m.idle) })
	}
}

// stamp returns the time to record for an event that happened at real, a
// reading of the real clock: real itself, or Deps.Now's reading when the
// server gave a clock of its own. Socket deadlines always use real time.
func (m *Manager) stamp(real time.Time) time.Time {
	if m.clock != nil {
		return m.clock()
	}
	return real
}

// closingNow reports whether Close was called.
func (m *Manager) closingNow() bool {
	return m.closingSet.Load()
}

// Close stops the manager gracefully and returns at once: new connections
// are refused, idle HTTP/1 connections close, busy ones close after the
// response in flight (with Connection: close), and HTTP/2 connections get
// a GOAWAY and close when their streams are done. Shutdown waits for that.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closing = true
		m.closingSet.Store(true)
		conns := make([]*serverConn, 0, len(m.conns))
		for sc := range m.conns {
			conns = append(conns, sc)
		}
		if len(m.conns) == 0 {
			m.idleOnce.Do(func() { close(m.idle) })
		}
		m.mu.Unlock()
		close(m.closed)
		for _, sc := range conns {
			sc.closeIfIdle()
		}
		// Requests in flight still log: the loggers close when the
		// last connection has gone.
		go func() {
			<-m.idle
			m.closeLogs()
		}()
	})
	return nil
}

// closeLogs closes the access loggers, delivering what they buffer, the
// filter configurations that hold resources, and the tracer.
func (m *Manager) closeLogs() {
	m.logsOnce.Do(func() {
		if err := m.logs.Close(); err != nil {
			m.log.V(1).Info("closing access logs", "error", err.Error())
		}
		if err := m.uplog.close(); err != nil {
			m.log.V(1).Info("closing upstream logs", "error", err.Error())
		}
		// The filters' channels and connections go with the last
		// request too.
		m.filters.close()
		m.upgradeFilters.close()
		// The route table's per-route configurations close with the
		// last request that uses them.
		m.releaseRoutes()
		if m.tracing != nil && m.tracing.driver != nil {
			if err := m.tracing.driver.Close(); err != nil {
				m.log.V(1).Info("closing the tracer", "error", err.Error())
			}
		}
	})
}

// Shutdown closes the manager gracefully (see Close) and waits until every
// connection is gone or ctx ends; then it cuts the connections left,
// requests in flight included, and returns ctx's error.
func (m *Manager) Shutdown(ctx context.Context) error {
	_ = m.Close()
	select {
	case <-m.idle:
		m.cancel()
		m.closeLogs()
		return nil
	case <-ctx.Done():
	}
	m.cancel()
	// Cut outside the lock: a connection serving inside its socket's
	// wait (see inline.go) ends its request, which may take the lock,
	// before its Close returns.
	m.mu.Lock()
	left := make([]*serverConn, 0, len(m.conns))
	for sc := range m.conns {
		left = append(left, sc)
	}
	m.mu.Unlock()
	for _, sc := range left {
		sc.cut()
	}
	// The loggers deliver before the server closes the clusters their
	// services are reached through.
	m.closeLogs()
	return ctx.Err()
}

// ActiveConnections returns the number of downstream connections being
// served, for drain progress.
func (m *Manager) ActiveConnections() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}
