package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// builtListener is a configured listener with the network filters it
// built, which the server starts with it and closes at shutdown.
type builtListener struct {
	*listener.Listener
	// managers are the terminal network filters of its filter chains;
	// closers their other filters that hold resources, closed once the
	// managers are shut down.
	managers []netfilter.Terminal
	closers  []io.Closer
	// config is the listener's configuration, its name filled in.
	config *listenerv3.Listener
	// dynamic is set for listeners from discovery, with the version_info
	// of the update that added them and when it was applied.
	dynamic     bool
	version     string
	lastUpdated time.Time
	// warm is what the listener waits for before it serves: the first
	// configuration of its route discovery names (Envoy's listener
	// warming).
	warm *listenerWarming
	// states are its network filters' states, which an update that
	// changes only filter chains carries over (see chainStates).
	states *chainStates
}

// buildListeners turns static listeners into unbound listeners. The
// bootstrap was validated already (supported fields and extensions);
// errors here are the ones only building reveals, one per problem, each
// with its configuration path.
func (s *Server) buildListeners(cfgs []*listenerv3.Listener, manager *listener.ManagerStats) ([]*builtListener, error) {
	var out []*builtListener
	var errs []error
	addrs := map[string]string{}
	for i, lc := range cfgs {
		path := fmt.Sprintf("static_resources.listeners[%d]", i)
		bl, err := s.buildListener(lc, manager, nil)
		if err != nil {
			errs = append(errs, listener.PrefixErrors(path+".", err)...)
			continue
		}
		// Two sockets with SO_REUSEPORT on one address would silently share
		// its connections. Validation refused duplicate main addresses;
		// this also covers the additional ones.
		for k, a := range bl.Addresses() {
			sa := a.GetSocketAddress()
			if sa.GetPortValue() == 0 {
				continue // a fresh port per socket: no clash possible
			}
			field := path + ".address"
			if k > 0 {
				field = fmt.Sprintf("%s.additional_addresses[%d].address", path, k-1)
			}
			key := listener.AddressKey(sa, bl.IsUDP())
			if first, dup := addrs[key]; dup {
				errs = append(errs, fmt.Errorf("%s: address %s is already used by %s", field, listener.AddressString(sa), first))
				continue
			}
			addrs[key] = field
		}
		out = append(out, bl)
	}
	if err := errors.Join(errs...); err != nil {
		for _, bl := range out {
			bl.discard()
		}
		return nil, err
	}
	return out, nil
}

// buildListener builds one listener and the network filters of its filter
// chains; old, when not nil, is the listener it replaces. Errors name the
// field below the listener.
func (s *Server) buildListener(lc *listenerv3.Listener, manager *listener.ManagerStats, old *builtListener) (*builtListener, error) {
	if lc.GetName() == "" {
		// Envoy names an unnamed listener with a random UUID.
		lc = proto.CloneOf(lc)
		lc.Name = randomUUID()
	}
	if dl := s.logs.Logger("config").V(1); dl.Enabled() {
		// Envoy's listener manager debug record of each listener it builds.
		sa := lc.GetAddress().GetSocketAddress()
		dl.Info("begin add/update listener: name="+lc.GetName(), "address", sa.GetAddress(), "port", sa.GetPortValue(), "update", old != nil)
	}
	bl := &builtListener{config: lc, warm: &listenerWarming{}, states: &chainStates{}}
	if old != nil && updatesInPlace(old.config, lc) {
		bl.states.prev = old.states
		defer func() { bl.states.prev = nil }()
	}
	scope := listener.StatScope(lc)
	l, err := listener.Build(lc, listener.Deps{
		Stats:   s.stats,
		Manager: manager,
		Log:     s.logs.Logger("conn_handler"),
		Workers: int(s.opts.Concurrency),
		Drain: listener.DrainOptions{
			Time:              s.opts.DrainTime,
			Immediate:         s.opts.DrainStrategy == options.DrainImmediate,
			HealthCheckFailed: s.life.closesEveryConnection,
			Now:               s.now,
		},
		BuildChain: func(fc *listenerv3.FilterChain, drain *listener.Drain) (listener.ConnHandler, error) {
			ch, err := s.buildNetworkFilters(fc, drain, chainContext{
				bypassOverload: lc.GetBypassOverloadManager(),
				scope:          scope,
				egress:         lc.GetTrafficDirection() == corev3.TrafficDirection_OUTBOUND,
				metadata:       lc.GetMetadata(),
				warm:           bl.warm,
				states:         bl.states.forChain(fc),
			})
			if err != nil {
				return nil, err
			}
			bl.managers = append(bl.managers, ch.Terminal())
			bl.closers = append(bl.closers, ch.Closers()...)
			return ch, nil
		},
		BuildListenerFilter: s.buildListenerFilter,
		BuildTransportSocket: func(ts *corev3.TransportSocket) (listener.Transport, error) {
			return s.buildTransportSocket(ts, downstreamTransport{warm: bl.warm, scope: scope, closer: func(c io.Closer) {
				bl.closers = append(bl.closers, c)
			}})
		},
		OriginalDst: s.originalDstFilter,
		Handoff:     s.handoffListener,
		// A UDP listener's listener_filters are UDP listener filters.
		BuildUDPFilter:    s.buildUDPFilter,
		Now:               s.now,
		Overload:          s.listenerOverload(lc),
		InternalListeners: s.internal.enabled,
		Runtime:           s.runtime,
		// The listener's own access_log, closed with what its filters
		// hold once its connections are gone.
		AccessLogs: func(prefix string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error) {
			logs, err := s.compileAccessLogs(prefix, cfgs)
			if err == nil {
				bl.closers = append(bl.closers, logs)
			}
			return logs, err
		},
	})
	if err != nil {
		bl.discard()
		return nil, err
	}
	bl.Listener = l
	return bl, nil
}

// chainContext is what a filter chain's filters know of their listener:
// scope is the listener's stat scope, under which the connection manager
// keeps its per-listener stats; egress is set for OUTBOUND listeners
// (their spans are egress spans); metadata is the listener's metadata
// (%METADATA(LISTENER:...)%).
type chainContext struct {
	// bypassOverload is the listener's bypass_overload_manager: its
	// connection managers see no overload actions.
	bypassOverload bool
	scope          string
	egress         bool
	metadata       *corev3.Metadata
	// warm collects what the listener waits for before it serves (its
	// route discovery names).
	warm *listenerWarming
	// states are the States of the chain's filters, one per filter.
	states []*netfilter.State
}

// buildNetworkFilters builds the network filters of one filter chain:
// read filters, then one terminal filter (the http_connection_manager or
// a terminal network filter from the registry, such as tcp_proxy). Errors
// name the field below the filter chain, one per problem.
func (s *Server) buildNetworkFilters(fc *listenerv3.FilterChain, drain *listener.Drain, cc chainContext) (*netfilter.Chain, error) {
	filters := fc.GetFilters()
	if len(filters) == 0 {
		return nil, errors.New("filters: a filter chain needs at least one network filter, ending with a terminal filter (http_connection_manager or tcp_proxy)")
	}
	var (
		built []netfilter.Filter
		errs  []error
	)
	for i, f := range filters {
		nf, err := s.buildNetworkFilter(f, drain, cc, cc.states[i])
		if err != nil {
			errs = append(errs, listener.PrefixErrors(fmt.Sprintf("filters[%d].", i), err)...)
			continue
		}
		built = append(built, nf)
	}
	// A chain that will not run releases what every filter built holds
	// (a read filter's gRPC channel), not only its terminal filter.
	closeBuilt := func() { _ = netfilter.CloseFilters(built) }
	if err := errors.Join(errs...); err != nil {
		closeBuilt()
		return nil, err
	}
	ch, err := netfilter.NewChain(built)
	if err != nil {
		closeBuilt()
		return nil, err
	}
	return ch, nil
}

// buildNetworkFilter builds one network filter, found by the type of its
// typed_config (or its name), with the state it keeps. Errors name the
// field below the filter.
func (s *Server) buildNetworkFilter(f *listenerv3.Filter, drain *listener.Drain, cc chainContext, state *netfilter.State) (netfilter.Filter, error) {
	ext, msg, err := s.ext.Resolve(extension.Ref{
		Kind: "network filter", Category: netfilter.Category, Name: f.GetName(), Config: f.GetTypedConfig(),
	}, extension.LookupByName(runtimeValues{s.runtime}))
	if err != nil {
		return nil, err
	}
	if hcm, ok := msg.(*hcmv3.HttpConnectionManager); ok {
		return s.buildHTTPConnectionManager(hcm, drain, cc)
	}
	factory, ok := ext.Factory.(netfilter.Factory)
	if !ok {
		return nil, fmt.Errorf("typed_config: network filter %s is not supported by Outrigger", ext.Name)
	}
	nctx := netfilter.Context{
		Stats:        s.stats,
		Log:          s.logs.Logger("filter"),
		Clusters:     networkClusters{m: s.clusters},
		OnDemand:     s.onDemand(),
		AccessLogs:   s.compileAccessLogs,
		Now:          s.clock,
		Runtime:      runtimeValues{s.runtime},
		Shared:       s.shared,
		State:        state,
		OpenGRPC:     s.openGRPC,
		Extensions:   s.ext,
		NodeMetadata: s.boot.GetNode().GetMetadata(),
	}
	if drain != nil {
		// A nil *listener.Drain would make a Drainer that is not nil.
		nctx.Drain = drain
	}
	nf, err := factory.Compile(msg, nctx)
	if err != nil {
		return nil, errors.Join(listener.PrefixErrors("typed_config.", err)...)
	}
	return nf, nil
}

// buildListenerFilter builds one listener filter, found by the type of
// its typed_config (or its name). Errors name the field below the filter.
func (s *Server) buildListenerFilter(f *listenerv3.ListenerFilter) (listenerfilter.Filter, error) {
	ext, msg, err := s.ext.Resolve(extension.Ref{
		Kind: "listener filter", Category: listenerfilter.Category, Name: f.GetName(), Config: f.GetTypedConfig(),
	}, extension.LookupByName(runtimeValues{s.runtime}))
	if err != nil {
		return nil, err
	}
	factory, ok := ext.Factory.(listenerfilter.Factory)
	if !ok {
		return nil, fmt.Errorf("typed_config: listener filter %s is not supported by Outrigger", ext.Name)
	}
	lf, err := factory.Compile(msg, listenerfilter.Context{Stats: s.stats, Log: s.logs.Logger("filter"), Runtime: runtimeValues{s.runtime}, Now: s.clock})
	if err != nil {
		return nil, errors.Join(listener.PrefixErrors("typed_config.", err)...)
	}
	return lf, nil
}

// buildHTTPConnectionManager builds an http_connection_manager. Errors
// name the field below the filter.
func (s *Server) buildHTTPConnectionManager(hcm *hcmv3.HttpConnectionManager, drain *listener.Drain, cc chainContext) (*httpconn.Manager, error) {
	m, err := httpconn.New(hcm, httpconn.Deps{
		Log:                s.logs.Logger("http"),
		RouterLog:          s.logs.Logger("router"),
		Stats:              s.stats,
		ListenerStatPrefix: cc.scope,
		ListenerMetadata:   cc.metadata,
		Upstreams:          s.upstreams(),
		Drain:              drain,
		Health:             s,
		Extensions:         s.ext,
		Services:           filterServices{s: s, warm: cc.warm},
		AccessLogs:         s.accessLogContext(),
		Runtime:            runtimeValues{s.runtime},
		Tracing:            s.tracingContext(),
		DefaultTracer:      s.defaultTracer(),
		Egress:             cc.egress,
		Overload:           s.httpOverload(cc.bypassOverload),
		Now:                s.clock,
	})
	// One line, with its full path, per problem; the clusters are checked
	// even when the manager could not be built.
	var errs []error
	if err != nil {
		errs = listener.PrefixErrors("typed_config.", err)
	}
	if rds := hcm.GetRds(); rds != nil && m != nil && len(errs) == 0 {
		if err := s.rds.register(m, rds, hcm.GetStatPrefix(), cc.warm); err != nil {
			errs = append(errs, fmt.Errorf("typed_config.%w", err))
		}
	}
	// validate_clusters, whose default is true for an inline route
	// configuration, in static and discovered listeners alike, as in
	// Envoy. The first unknown cluster is reported, as Envoy reports it.
	if cerrs := router.ValidateClusters(hcm.GetRouteConfig(), true, s.clusterExists); len(cerrs) > 0 {
		errs = append(errs, fmt.Errorf("typed_config.route_config.%w", cerrs[0]))
	}
	if len(errs) > 0 {
		if m != nil {
			_ = m.Close()
		}
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// compileAccessLogs compiles a network filter's access_log list with the
// server's access loggers.
func (s *Server) compileAccessLogs(prefix string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error) {
	l, err := loggers.Compile(prefix, cfgs, loggers.Context{
		Registry: s.ext,
		ByName:   extension.LookupByName(runtimeValues{s.runtime}),
		Sink:     s.accessLogContext(),
		Filter:   logfilter.Context{Runtime: runtimeValues{s.runtime}},
	})
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// clusterExists tells validate_clusters whether a cluster is known. When
// the cluster manager could not be built (its own errors are reported),
// the configured static cluster names stand in for it, so that routes to
// a cluster with a configuration error are not reported a second time.
func (s *Server) clusterExists(name string) bool {
	if s.clusters != nil {
		return s.clusters.Cluster(name) != nil
	}
	for _, c := range s.boot.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return true
		}
	}
	return false
}

// closeFilters closes the network filters of a listener that will not run.
func (bl *builtListener) closeFilters() {
	bl.warm.close()
	for _, m := range bl.managers {
		_ = m.Close()
	}
	if bl.Listener != nil {
		bl.CloseUDPFilters()
	}
}

// discard closes everything a listener that never served built: its
// terminal filters and what its other filters hold.
func (bl *builtListener) discard() {
	bl.closeFilters()
	bl.closeResources()
}

// closeResources closes what the listener's read filters hold (their
// gRPC channels), once its connections are gone.
func (bl *builtListener) closeResources() {
	for _, c := range bl.closers {
		_ = c.Close()
	}
}

// accessLogContext is what the server gives access loggers: its
// destinations, gRPC channels to its clusters, the node, stats and the
// access-log logger.
func (s *Server) accessLogContext() accesslog.SinkContext {
	return accesslog.SinkContext{
		Open:     s.openAccessLog,
		OpenGRPC: s.openGRPC,
		Cluster:  s.grpcCluster,
		Node:     s.boot.GetNode(),
		Stats:    s.stats,
		Log:      s.logs.Logger("grpc"),
	}
}

// openGRPC opens the channel of a GrpcService; an envoy_grpc service
// reaches its cluster through the cluster manager.
func (s *Server) openGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
	return grpcservice.Open(gs, grpcservice.Context{Cluster: s.grpcCluster, LocalAddress: s.localAddress})
}

// grpcCluster is the cluster of the configuration named name, nil when
// there is none (yet): what gRPC services and HTTP exporters reach their
// collectors through.
func (s *Server) grpcCluster(name string) grpcservice.Cluster {
	if s.clusters == nil {
		return nil
	}
	if c := s.clusters.Cluster(name); c != nil {
		return c
	}
	return nil
}

// openAccessLog opens the destination of a listener's access log (see
// sharedLogFile): a file, or standard output or error.
func (s *Server) openAccessLog(d accesslog.Destination, path string) (io.Writer, error) {
	switch d {
	case accesslog.Stdout:
		path = stdoutPath
	case accesslog.Stderr:
		path = stderrPath
	}
	fw, err := s.sharedLogFile(path)
	if err != nil {
		return nil, fmt.Errorf("opening access log: %w", err)
	}
	return fw, nil
}

// Listeners returns the listeners in service and the addresses they
// listen on (the OS-chosen port where the configuration said 0). Stopped
// listeners are still listed, as in Envoy; listeners that discovery
// removed are not. It implements admin.ListenerSource.
func (s *Server) Listeners() *adminv3.Listeners {
	out := &adminv3.Listeners{}
	for _, bl := range s.activeListeners() {
		addrs := bl.Addresses()
		out.ListenerStatuses = append(out.ListenerStatuses, &adminv3.ListenerStatus{
			Name:                     bl.Name(),
			LocalAddress:             addrs[0],
			AdditionalLocalAddresses: addrs[1:],
		})
	}
	return out
}

// randomUUID returns a random (version 4) UUID.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
