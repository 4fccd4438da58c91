// Package listener binds the proxy's listening sockets, accepts connections
// and hands each to the network filter chain chosen for it. It knows nothing
// of HTTP: a filter chain is anything that can take over a connection.
//
// A listener is built from Envoy's v3 Listener message: its addresses
// (IPv4, IPv6, port 0 for an OS-chosen port), traffic direction, filter
// chains with their filter_chain_match and a default chain, the
// per-connection buffer limit and the reuse-port switch. With several
// workers (--concurrency) each worker accepts on a socket of its own bound
// with SO_REUSEPORT, so the kernel spreads connections over them. Each
// listener also owns its drain state (see Drain).
//
// At accept time a listener applies the connection limits and the overload
// manager's connection actions (see Overload and accept): the global limit,
// reject_incoming_connections, its own runtime connection limit, and
// stop_accepting_connections, which pauses its accept loops. With
// connection_balance_config.exact_balance each connection counts for the
// worker with the fewest active connections.
package listener

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// ConnHandler is a network filter chain: it takes ownership of an accepted
// connection and must close it. HandleConn is called on a goroutine of its
// own, so it may serve the connection to its end before returning; it may
// also return earlier and have the connection served and closed from
// elsewhere (the HTTP connection manager's idle connections wait without
// a goroutine): the listener accounts for the connection's end when it is
// closed, not when HandleConn returns.
type ConnHandler interface {
	HandleConn(c net.Conn)
}

// Deps is what a listener needs from the server that builds it.
type Deps struct {
	// Stats is the server's stat store (required).
	Stats *stats.Store
	// Manager holds the listener manager stats; nil takes them from Stats.
	Manager *ManagerStats
	// Log is the "conn_handler" component logger.
	Log logr.Logger
	// Workers is --concurrency; below 1 means 1.
	Workers int
	// Drain configures the listener's drain.
	Drain DrainOptions
	// BuildChain builds the network filters of one filter chain; drain is
	// the listener's drain state, which the filters consult per response.
	// Its errors name the field path below the filter chain.
	BuildChain func(fc *listenerv3.FilterChain, drain *Drain) (ConnHandler, error)
	// BuildListenerFilter builds one of the listener_filters; its errors
	// name the field path below the filter. Nil refuses listener filters.
	BuildListenerFilter func(f *listenerv3.ListenerFilter) (listenerfilter.Filter, error)
	// BuildTransportSocket compiles a filter chain's transport_socket
	// (TLS, raw_buffer, a tap over either); its errors name the field path
	// below the transport socket. Nil refuses transport sockets.
	BuildTransportSocket func(ts *corev3.TransportSocket) (Transport, error)
	// Now is the clock of connection lengths; nil means time.Now.
	Now func() time.Time
	// Overload is the server's overload manager: the global connection
	// limit and the connection actions. Nil applies neither.
	Overload Overload
	// OriginalDst builds the original_dst listener filter, which a
	// use_original_dst listener runs before its own listener filters (as
	// Envoy adds it); nil refuses use_original_dst.
	OriginalDst func() (listenerfilter.Filter, error)
	// Handoff finds the listener of an original destination for a
	// use_original_dst listener; nil keeps every connection on the
	// listener that accepted it.
	Handoff Handoff
	// BuildUDPFilter builds one of a UDP listener's listener_filters (a
	// UDP listener filter); its errors name the field path below the
	// filter. Nil refuses UDP listeners.
	BuildUDPFilter func(f *listenerv3.ListenerFilter) (udpfilter.Filter, error)
	// AccessLogs compiles the listener's access_log; nil refuses it.
	AccessLogs AccessLogCompiler
	// InternalListeners is set when the bootstrap has the
	// internal_listener extension, without which Envoy refuses internal
	// listeners.
	InternalListeners bool
	// Runtime holds the per-listener connection limit
	// (envoy.resource_limits.listener.<name>.connection_limit), read at
	// each accept; nil means no limit.
	Runtime *runtime.Runtime
}

// Overload is the overload manager as a listener consults it at accept
// time (the server's *overload.Manager).
type Overload interface {
	// AcceptState reports whether stop_accepting_connections pauses the
	// accept loops, and returns a channel closed when that next changes.
	AcceptState() (paused bool, changed <-chan struct{})
	// RejectConnection reports whether reject_incoming_connections
	// rejects a connection just accepted.
	RejectConnection() bool
	// AcquireConnection counts a new connection against the global limit
	// (only counts it when enforce is false); false means refused.
	AcquireConnection(enforce bool) bool
	// ReleaseConnection ends the count of an acquired connection.
	ReleaseConnection()
}

// Listener is one configured listener: its sockets (one per address and
// worker with reuse_port, else one per address shared by the workers), its
// filter chains, stats and drain state.
type Listener struct {
	name      string
	direction corev3.TrafficDirection
	addrs     []socketAddress // address, then additional_addresses
	// bindToPort is false for a listener that binds nothing and only
	// takes the connections a use_original_dst listener hands it
	// (bind_to_port: false).
	bindToPort bool
	// internal is set for an internal listener (internal_listener): no
	// address, no socket; its connections come from AcceptInternal, each
	// counting for the next worker (nextWorker).
	internal   bool
	nextWorker atomic.Uint64
	reusePort  bool
	// addrOpts are the socket options of each address of addrs: the
	// listener's socket_options (or an additional address's own), its
	// tcp_fast_open_queue_length and its tcp_keepalive (or the address's).
	addrOpts []sockopt.Set
	// backlog is tcp_backlog_size, -1 for the system's (somaxconn).
	backlog int
	// mptcp is enable_mptcp: the listening sockets are MPTCP ones, which
	// plain TCP clients reach as before.
	mptcp    bool
	freebind bool
	// transparent is the listener's transparent: IP_TRANSPARENT before
	// bind (a false value sets nothing, as in Envoy).
	transparent bool
	workers     int
	bufferLimit uint32
	setBuffers  bool // per_connection_buffer_limit_bytes was given
	chains      chainSet
	// lfilters are the listener filters, run on each connection before
	// its filter chain is chosen; lfTimeout bounds them (0: no bound) and
	// lfContinue sends a connection that reaches it on to its filter
	// chain instead of closing it.
	lfilters   []listenerfilter.Filter
	lfTimeout  time.Duration
	lfContinue bool
	// handoff is set for use_original_dst: connections whose original
	// destination another listener serves go to that listener.
	handoff Handoff
	drain   *Drain
	stats   listenerStats
	// tlsStats are the listener's ssl.* stats, nil when no filter chain
	// runs TLS.
	tlsStats    *tlsconfig.Stats
	workerStats []workerStats
	manager     *ManagerStats
	log         logr.Logger
	now         func() time.Time

	// overload is the server's overload manager, nil for none.
	overload Overload
	// enforceGlobal is false with ignore_global_conn_limit: connections
	// are counted toward the global limit but never refused by it.
	enforceGlobal bool
	// runtime and limitKeys give the per-listener connection limit: the
	// first of the keys (proxy. then envoy. spelling) the runtime has.
	runtime   *runtime.Runtime
	limitKeys [2]string
	// exactBalance attributes each connection to the worker with the
	// fewest active connections (connection_balance_config.exact_balance);
	// balanceMu serializes those choices.
	exactBalance bool
	balanceMu    sync.Mutex

	active atomic.Int64 // open connections, for the server's total and the listener's limit
	// paused is non-nil while stop_accepting_connections pauses the accept
	// loops; it is closed when they may resume. Changed under mu.
	paused atomic.Pointer[chan struct{}]

	// logs is the listener's access_log, nil without one (see
	// accesslog.go); metadata is the listener's metadata, for its
	// entries' %METADATA(LISTENER:...)%.
	logs     netfilter.AccessLogger
	metadata *corev3.Metadata

	// udp is set for a UDP listener (address protocol UDP), which has
	// UDP listener filters instead of filter chains.
	udp *udpListener

	// inherit, when set, offers sockets from a hot-restart parent (see
	// SetSocketSource).
	inherit SocketSource

	mu      sync.Mutex
	sockets [][]net.Listener // per address: one socket, or one per worker
	bound   []net.Addr       // per address, once bound
	serving bool
	stopped bool
	stopCh  chan struct{} // closed by stop
	done    chan struct{} // closed when Serve returns
	// conns runs the accepted connections' goroutines.
	conns *runner
}

// Build builds a listener from its configuration without binding anything.
// Errors name the field path below the listener, one error per problem
// (joined).
func Build(lc *listenerv3.Listener, deps Deps) (*Listener, error) {
	if deps.Stats == nil {
		return nil, errors.New("listener: no stat store")
	}
	l := &Listener{
		name:      lc.GetName(),
		direction: lc.GetTrafficDirection(),
		workers:   max(deps.Workers, 1),
		manager:   deps.Manager,
		log:       deps.Log,
		now:       deps.Now,
		stopCh:    make(chan struct{}),
		done:      make(chan struct{}),

		overload:      deps.Overload,
		enforceGlobal: !lc.GetIgnoreGlobalConnLimit(),
		runtime:       deps.Runtime,
		limitKeys:     connectionLimitKeys(lc.GetName()),
		backlog:       -1,
	}
	l.conns = &runner{stop: l.stopCh}
	if l.manager == nil {
		l.manager = NewManagerStats(deps.Stats)
	}
	if l.now == nil {
		l.now = time.Now
	}
	var errs []error
	var primary socketAddress
	if lc.GetInternalListener() != nil {
		l.internal = true
		errs = append(errs, internalErrors(lc, deps.InternalListeners)...)
	} else {
		errs = append(errs, l.buildSocketSettings(lc, &primary)...)
	}
	l.bufferLimit = DefaultBufferLimit
	if v := lc.GetPerConnectionBufferLimitBytes(); v != nil {
		l.bufferLimit, l.setBuffers = v.GetValue(), true
	}
	if l.setBuffers && l.bufferLimit == 0 {
		errs = append(errs, errors.New("per_connection_buffer_limit_bytes: must be above 0"))
	}
	if err := l.compileAccessLogs(lc, deps.AccessLogs); err != nil {
		errs = append(errs, err)
	}
	if primary.isUDP() {
		return l.finishUDP(lc, deps, append(errs, l.buildUDP(lc, deps)...))
	}
	for i, a := range l.addrs[min(1, len(l.addrs)):] {
		if a.isUDP() {
			errs = append(errs, fmt.Errorf("additional_addresses[%d].address.socket_address.protocol: a TCP listener's addresses must all be TCP", i))
		}
	}
	if err := l.connectionBalance(lc.GetConnectionBalanceConfig()); err != nil {
		errs = append(errs, err)
	}
	if err := l.buildListenerFilters(lc, deps.BuildListenerFilter); err != nil {
		errs = append(errs, err)
	}
	if lc.GetUseOriginalDst().GetValue() {
		var od listenerfilter.Filter
		err := errors.New("not supported here (no original_dst listener filter)")
		if deps.OriginalDst != nil {
			od, err = deps.OriginalDst()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("use_original_dst: %w", err))
		} else {
			// Envoy restores the original destination first, then runs
			// the configured listener filters.
			l.lfilters = append([]listenerfilter.Filter{od}, l.lfilters...)
			l.handoff = deps.Handoff
		}
	}
	l.drain = newDrain(deps.Drain, lc.GetDrainType() == listenerv3.Listener_MODIFY_ONLY)
	// The filter_chain_matcher's custom input matchers count under the
	// listener's scope and read the runtime, as Envoy's listener factory
	// context gives them.
	matchStats := deps.Stats.Scope(StatScope(lc))
	env := httpmatch.Env{Stats: &matchStats}
	if deps.Runtime != nil {
		env.Runtime = deps.Runtime.Latest()
	}
	if err := l.buildChains(lc, deps.BuildChain, deps.BuildTransportSocket, env); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	scope := deps.Stats.Scope(StatScope(lc))
	l.stats = newListenerStats(scope)
	if l.chains.hasTLS() {
		l.tlsStats = tlsconfig.NewStats(scope.Scope("ssl."))
	}
	for w := range l.workers {
		l.workerStats = append(l.workerStats, newWorkerStats(scope, w))
	}
	// listener_added and total_listeners_active are the caller's to count:
	// only it knows whether this listener is new, replaces another, or
	// will be thrown away unbound.
	return l, nil
}

// buildSocketSettings reads the addresses and socket settings of a
// listener with sockets (any but an internal listener) and sets primary
// to its main address.
func (l *Listener) buildSocketSettings(lc *listenerv3.Listener, primary *socketAddress) []error {
	if ie := internalAddressErrors(lc); ie != nil {
		return ie
	}
	var errs []error
	p, err := parseAddress(lc.GetAddress())
	if err != nil {
		errs = append(errs, fmt.Errorf("address.%w", err))
	}
	*primary = p
	l.addrs = append(l.addrs, p)
	for i, aa := range lc.GetAdditionalAddresses() {
		a, err := parseAddress(aa.GetAddress())
		if err != nil {
			errs = append(errs, fmt.Errorf("additional_addresses[%d].address.%w", i, err))
			continue
		}
		l.addrs = append(l.addrs, a)
	}
	l.bindToPort = lc.GetBindToPort() == nil || lc.GetBindToPort().GetValue()
	l.reusePort = reusePortSupported && reusePortWanted(lc)
	return append(errs, l.buildSocketOptions(lc, p)...)
}

// buildSocketOptions reads the socket options of each address of a
// listener with sockets: socket_options, tcp_fast_open_queue_length,
// tcp_backlog_size, enable_mptcp, tcp_keepalive (each address's own
// where it has them), freebind and transparent.
func (l *Listener) buildSocketOptions(lc *listenerv3.Listener, p socketAddress) []error {
	var errs []error
	opts, err := sockopt.Compile(lc.GetSocketOptions())
	if err != nil {
		errs = append(errs, fieldpath.Prefix("socket_options", err))
	}
	var tcpOpts sockopt.Set // fast open's, for every address
	if q := lc.GetTcpFastOpenQueueLength(); q != nil {
		if p.isUDP() {
			errs = append(errs, errors.New("tcp_fast_open_queue_length: not supported on a UDP listener"))
		} else if fo, err := sockopt.TCPFastOpen(q.GetValue()); err != nil {
			errs = append(errs, fmt.Errorf("tcp_fast_open_queue_length: %w", err))
		} else {
			tcpOpts = append(tcpOpts, fo)
		}
	}
	if b := lc.GetTcpBacklogSize(); b != nil {
		switch {
		case p.isUDP():
			errs = append(errs, errors.New("tcp_backlog_size: not supported on a UDP listener"))
		case b.GetValue() > math.MaxInt32:
			errs = append(errs, fmt.Errorf("tcp_backlog_size: %d does not fit in a C int", b.GetValue()))
		default:
			l.backlog = int(b.GetValue())
		}
	}
	if lc.GetEnableMptcp() {
		switch {
		case p.isUDP():
			errs = append(errs, errors.New("enable_mptcp: not supported on a UDP listener"))
		case !mptcpSupported():
			errs = append(errs, fmt.Errorf("enable_mptcp: listener %s: enable_mptcp is set but MPTCP is not supported by the operating system", lc.GetName()))
		default:
			l.mptcp = true
		}
	}
	keepalive, err := l.keepaliveOptions("tcp_keepalive", lc.GetTcpKeepalive(), p)
	if err != nil {
		errs = append(errs, err)
	}
	l.addrOpts = append(l.addrOpts, concatOptions(opts, tcpOpts, keepalive))
	for i, aa := range lc.GetAdditionalAddresses() {
		own, ka := opts, keepalive
		path := fmt.Sprintf("additional_addresses[%d].", i)
		if so := aa.GetSocketOptions(); so != nil {
			// The address's own list replaces the listener's, an empty
			// one meaning none, as in Envoy.
			if own, err = sockopt.Compile(so.GetSocketOptions()); err != nil {
				errs = append(errs, fieldpath.Prefix(path+"socket_options.socket_options", err))
			}
		}
		if k := aa.GetTcpKeepalive(); k != nil {
			if ka, err = l.keepaliveOptions(path+"tcp_keepalive", k, p); err != nil {
				errs = append(errs, err)
			}
		}
		l.addrOpts = append(l.addrOpts, concatOptions(own, tcpOpts, ka))
	}
	l.freebind, l.transparent = lc.GetFreebind().GetValue(), lc.GetTransparent().GetValue()
	return errs
}

// finishUDP ends Build for a UDP listener: its stats, under the
// listener's scope like a TCP listener's, plus udp.downstream_rx_datagram_dropped.
func (l *Listener) finishUDP(lc *listenerv3.Listener, deps Deps, errs []error) (*Listener, error) {
	if err := errors.Join(errs...); err != nil {
		if l.udp != nil {
			l.udp.closeUDPFilters()
		}
		return nil, err
	}
	l.drain = newDrain(deps.Drain, lc.GetDrainType() == listenerv3.Listener_MODIFY_ONLY)
	scope := deps.Stats.Scope(statScopeName(lc.GetStatPrefix(), l.addrs[0]))
	l.stats = newListenerStats(scope)
	l.udp.dropped = scope.Counter("udp.downstream_rx_datagram_dropped")
	for w := range l.workers {
		l.workerStats = append(l.workerStats, newWorkerStats(scope, w))
	}
	return l, nil
}

// defaultListenerFiltersTimeout is Envoy's listener_filters_timeout when
// the field is unset.
const defaultListenerFiltersTimeout = 15 * time.Second

// buildListenerFilters builds the listener filters and reads their
// timeout settings.
func (l *Listener) buildListenerFilters(lc *listenerv3.Listener, build func(*listenerv3.ListenerFilter) (listenerfilter.Filter, error)) error {
	l.lfTimeout, l.lfContinue = defaultListenerFiltersTimeout, lc.GetContinueOnListenerFiltersTimeout()
	var errs []error
	if d := lc.GetListenerFiltersTimeout(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			errs = append(errs, errors.New("listener_filters_timeout: not a valid duration"))
		}
		l.lfTimeout = d.AsDuration()
	}
	for i, f := range lc.GetListenerFilters() {
		path := fmt.Sprintf("listener_filters[%d].", i)
		if build == nil {
			errs = append(errs, fmt.Errorf("%sname: listener filters are not supported here", path))
			continue
		}
		lf, err := build(f)
		if err != nil {
			errs = append(errs, PrefixErrors(path, err)...)
			continue
		}
		if d := f.GetFilterDisabled(); d != nil {
			skip, err := compilePredicate(d, path+"filter_disabled", 0)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			lf = disabledWhen{Filter: lf, skip: skip}
		}
		l.lfilters = append(l.lfilters, lf)
	}
	return errors.Join(errs...)
}

// buildChains compiles the filter chains and the default chain and builds
// their network filters.
func (l *Listener) buildChains(lc *listenerv3.Listener, build func(*listenerv3.FilterChain, *Drain) (ConnHandler, error), buildTransport func(*corev3.TransportSocket) (Transport, error), env httpmatch.Env) error {
	fcs := lc.GetFilterChains()
	if len(fcs) == 0 && lc.GetDefaultFilterChain() == nil {
		return errors.New("filter_chains: no filter chains specified (give filter_chains or a default_filter_chain)")
	}
	if build == nil {
		return errors.New("filter_chains: no network filter builder")
	}
	var errs []error
	names := map[string]string{}
	newChain := func(fc *listenerv3.FilterChain, path string) *chain {
		c := &chain{path: path, name: fc.GetName(), named: fc.GetName() != ""}
		if c.name == "" {
			c.name = path
		} else if first, dup := names[c.name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: filter chain name %q is already used by %s", path, c.name, first))
		} else {
			names[c.name] = path
		}
		h, err := build(fc, l.drain)
		if err != nil {
			errs = append(errs, PrefixErrors(path+".", err)...)
		}
		c.handler = h
		if err := c.compileTransport(fc, buildTransport); err != nil {
			errs = append(errs, PrefixErrors(path+".", err)...)
		}
		return c
	}
	fcm := lc.GetFilterChainMatcher()
	byName := map[string]*chain{}
	for i, fc := range fcs {
		path := fmt.Sprintf("filter_chains[%d]", i)
		c := newChain(fc, path)
		if fcm != nil {
			// With a filter_chain_matcher, Envoy selects chains by name
			// and ignores their filter_chain_match.
			if !c.named {
				errs = append(errs, fmt.Errorf("%s.name: a filter chain needs a name when the listener has a filter_chain_matcher", path))
			}
			byName[c.name] = c
			l.chains.chains = append(l.chains.chains, c)
			continue
		}
		m, err := compileMatch(fc.GetFilterChainMatch())
		if err != nil {
			errs = append(errs, PrefixErrors(path+".filter_chain_match.", err)...)
			continue
		}
		c.match = m
		for _, prev := range l.chains.chains {
			if prev.match.overlaps(m) {
				errs = append(errs, fmt.Errorf("%s.filter_chain_match: multiple filter chains with the same matching rules are defined (%s matches the same connections)", path, prev.path))
			}
		}
		l.chains.chains = append(l.chains.chains, c)
	}
	if dc := lc.GetDefaultFilterChain(); dc != nil {
		if dc.GetFilterChainMatch() != nil {
			errs = append(errs, errors.New("default_filter_chain.filter_chain_match: the default filter chain serves connections no other chain matches; it takes no filter_chain_match"))
		}
		l.chains.dflt = newChain(dc, "default_filter_chain")
	}
	if fcm != nil {
		m, err := compileChainMatcher(fcm, byName, env)
		if err != nil {
			errs = append(errs, PrefixErrors("filter_chain_matcher.", err)...)
		}
		l.chains.matcher = m
	}
	return errors.Join(errs...)
}

// PrefixErrors prefixes every error joined in err with prefix (a field
// path with its trailing '.'), so that each problem is reported on its own
// line with its full path: Build's errors are relative to the listener,
// and its caller knows where the listener sits.
func PrefixErrors(prefix string, err error) []error {
	return fieldpath.Split(fieldpath.Prefix(prefix, err))
}

// Name returns the configured listener name.
func (l *Listener) Name() string { return l.name }

// Direction returns the configured traffic direction.
func (l *Listener) Direction() corev3.TrafficDirection { return l.direction }

// Drain returns the listener's drain state.
func (l *Listener) Drain() *Drain { return l.drain }

// ActiveConnections returns the number of connections the listener has
// accepted and not yet closed.
func (l *Listener) ActiveConnections() int64 { return l.active.Load() }

// Bind opens the sockets: one per address, or with reuse_port one per
// address and worker. A port of 0 gets one from the kernel, shared by the
// worker sockets of that address; Addresses reports it. On failure nothing
// stays open. A listener stopped before it was bound (drained while the
// server was starting) stays stopped: Bind then opens nothing.
func (l *Listener) Bind() error { return l.BindFrom(nil) }

// socketsPerAddress is how many sockets each address takes: one per
// worker with reuse_port, else one the workers share.
func (l *Listener) socketsPerAddress() int {
	if l.reusePort {
		return l.workers
	}
	return 1
}

// bindAll opens the sockets of every address, taking them from inherited
// (by configured address) where it has them. On failure it closes what it
// opened, and leaves inherited alone.
func (l *Listener) bindAll(inherited map[socketAddress][]net.Listener) ([][]net.Listener, error) {
	if !l.bindToPort {
		// No socket for any address: the listener only takes hand-offs.
		return make([][]net.Listener, len(l.addrs)), nil
	}
	n := l.socketsPerAddress()
	var sockets [][]net.Listener
	var opened [][]net.Listener
	for i, a := range l.addrs {
		if socks, ok := inherited[a]; ok {
			sockets = append(sockets, socks)
			continue
		}
		if socks := l.fromSource(a, n); socks != nil {
			sockets = append(sockets, socks)
			opened = append(opened, socks)
			continue
		}
		opts, err := l.bindOptions(i, a)
		if err != nil {
			return nil, err
		}
		socks, err := bindAddress(a, n, l.reusePort, l.backlog, l.mptcp, opts)
		if err != nil {
			for _, ss := range opened {
				closeAll(ss)
			}
			return nil, fmt.Errorf("listener %q: cannot bind %s: %w", l.name, a, err)
		}
		sockets = append(sockets, socks)
		opened = append(opened, socks)
	}
	return sockets, nil
}

// bindOptions are the options of a socket bound to a, the listener's
// address i: its own (socket_options, fast open's and keep-alive's), then
// freebind's and transparent's, for the address's family.
func (l *Listener) bindOptions(i int, a socketAddress) (sockopt.Set, error) {
	opts := l.addrOpts[i]
	ipv6 := a.addr.Addr().Is6() && !a.addr.Addr().Is4In6()
	if l.freebind {
		fb, err := sockopt.Freebind(ipv6)
		if err != nil {
			return nil, fmt.Errorf("listener %q: freebind: %w", l.name, err)
		}
		opts = append(slices.Clip(opts), fb)
	}
	if l.transparent {
		tr, err := sockopt.Transparent(ipv6)
		if err != nil {
			return nil, fmt.Errorf("listener %q: transparent: %w", l.name, err)
		}
		opts = append(slices.Clip(opts), tr)
	}
	return opts, nil
}

// setSockets records the bound sockets. l.mu is held.
func (l *Listener) setSockets(sockets [][]net.Listener) {
	l.sockets = sockets
	for _, socks := range sockets {
		if len(socks) == 0 {
			return // bind_to_port: false; Addresses shows the configured ones
		}
		l.bound = append(l.bound, socks[0].Addr())
	}
}

// Addr returns the bound address of the listener's main address, or nil
// before Bind.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bound) == 0 {
		return nil
	}
	return l.bound[0]
}

// Addresses returns the listener's addresses, main address first: the
// bound ones (with the OS-chosen port where the configuration said 0) once
// bound, the configured ones before.
func (l *Listener) Addresses() []*corev3.Address {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.internal {
		return []*corev3.Address{l.internalAddress()}
	}
	out := make([]*corev3.Address, len(l.addrs))
	for i, a := range l.addrs {
		if i < len(l.bound) {
			out[i] = ProtoAddress(l.bound[i])
			continue
		}
		out[i] = ProtoAddress(net.TCPAddrFromAddrPort(a.addr))
	}
	return out
}

// Serve runs the workers' accept loops until Stop or Close, then returns
// nil. Accept errors (such as running out of file descriptors) are logged
// and retried with a growing delay; they never end the listener.
func (l *Listener) Serve() error {
	l.mu.Lock()
	switch {
	case l.serving:
		l.mu.Unlock()
		return fmt.Errorf("listener %q: already serving", l.name)
	case l.stopped && l.sockets == nil:
		l.serving = true
		l.mu.Unlock()
		close(l.done)
		return nil
	case l.sockets == nil:
		l.mu.Unlock()
		return fmt.Errorf("listener %q: Serve before Bind", l.name)
	}
	if l.udp != nil {
		l.serveUDP()
		return nil
	}
	l.serving = true
	var wg sync.WaitGroup
	if l.overload != nil {
		wg.Go(l.watchOverload)
	}
	if !l.bindToPort {
		// Nothing to accept on: serve hand-offs until stopped.
		wg.Go(func() { <-l.stopCh })
	}
	for _, socks := range l.sockets {
		if len(socks) == 0 {
			continue
		}
		for w := range l.workers {
			ln := socks[0]
			if len(socks) > 1 {
				ln = socks[w]
			}
			ws := &l.workerStats[w]
			wg.Go(func() { l.acceptLoop(ln, ws) })
		}
	}
	l.manager.ListenerCreateSuccess.Add(uint64(l.workers))
	l.mu.Unlock()
	wg.Wait()
	close(l.done)
	return nil
}

// Done is closed when Serve has returned.
func (l *Listener) Done() <-chan struct{} { return l.done }

// Stop closes the listener's sockets, so no new connection is accepted
// (clients are refused rather than left in an accept queue), and counts
// listener_manager.listener_stopped the first time. Connections already
// handed over are left to their filter chain: requests in flight
// complete. It is what /drain_listeners does to a listener.
func (l *Listener) Stop() {
	if l.stop() {
		l.manager.ListenerStopped.Inc()
	}
}

// Close stops accepting, like Stop, and cancels the end of any drain
// sequence still running. It is for shutdown and counts nothing.
func (l *Listener) Close() {
	l.drain.Cancel()
	l.stop()
}

// stop closes the sockets once and reports whether this call did.
func (l *Listener) stop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.stopped = true
	close(l.stopCh)
	for _, socks := range l.sockets {
		closeAll(socks)
	}
	if l.udp != nil {
		l.stopUDP()
	}
	return true
}

// Stopped reports whether Stop or Close has run.
func (l *Listener) Stopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

func closeAll(socks []net.Listener) {
	for _, s := range socks {
		_ = s.Close()
	}
}
