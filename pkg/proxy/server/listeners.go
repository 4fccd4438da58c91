package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// builtListener is a configured listener with the network filters it
// built, which the server starts with it and closes at shutdown.
type builtListener struct {
	*listener.Listener
	managers []*httpconn.Manager
	// config is the listener's configuration, its name filled in.
	config *listenerv3.Listener
	// dynamic is set for listeners from discovery, with the version_info
	// of the update that added them and when it was applied.
	dynamic     bool
	version     string
	lastUpdated time.Time
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
		bl, err := s.buildListener(lc, manager)
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
			key := listener.AddressString(sa)
			if first, dup := addrs[key]; dup {
				errs = append(errs, fmt.Errorf("%s: address %s is already used by %s", field, key, first))
				continue
			}
			addrs[key] = field
		}
		out = append(out, bl)
	}
	if err := errors.Join(errs...); err != nil {
		for _, bl := range out {
			bl.closeFilters()
		}
		return nil, err
	}
	return out, nil
}

// buildListener builds one listener and the network filters of its filter
// chains. Errors name the field below the listener.
func (s *Server) buildListener(lc *listenerv3.Listener, manager *listener.ManagerStats) (*builtListener, error) {
	if lc.GetName() == "" {
		// Envoy names an unnamed listener with a random UUID.
		lc = proto.CloneOf(lc)
		lc.Name = randomUUID()
	}
	bl := &builtListener{config: lc}
	scope := listener.StatScope(lc)
	l, err := listener.Build(lc, listener.Deps{
		Stats:   s.stats,
		Manager: manager,
		Log:     s.logs.Logger("conn_handler"),
		Workers: int(s.opts.Concurrency),
		Drain: listener.DrainOptions{
			Time:              s.opts.DrainTime,
			Immediate:         s.opts.DrainStrategy == options.DrainImmediate,
			HealthCheckFailed: s.HealthChecksFailed,
			Now:               s.now,
		},
		BuildChain: func(fc *listenerv3.FilterChain, drain *listener.Drain) (listener.ConnHandler, error) {
			m, err := s.buildNetworkFilters(fc, drain, scope, lc.GetTrafficDirection() == corev3.TrafficDirection_OUTBOUND)
			if err != nil {
				return nil, err
			}
			bl.managers = append(bl.managers, m)
			return m, nil
		},
		Now:      s.now,
		Overload: s.listenerOverload(),
		Runtime:  s.runtime,
	})
	if err != nil {
		bl.closeFilters()
		return nil, err
	}
	bl.Listener = l
	return bl, nil
}

// buildNetworkFilters builds the network filters of one filter chain: one
// http_connection_manager for now (tcp_proxy comes later). scope is the
// listener's stat scope, under which the connection manager keeps its
// per-listener stats; egress is set for OUTBOUND listeners (their spans are
// egress spans). Errors name the field below the filter chain.
func (s *Server) buildNetworkFilters(fc *listenerv3.FilterChain, drain *listener.Drain, scope string, egress bool) (*httpconn.Manager, error) {
	filters := fc.GetFilters()
	if len(filters) != 1 {
		return nil, fmt.Errorf("filters: exactly one network filter, the http_connection_manager, is supported by Outrigger for now (got %d)", len(filters))
	}
	tc := filters[0].GetTypedConfig()
	if tc == nil {
		return nil, errors.New("filters[0].typed_config: the filter's configuration is required")
	}
	cfg, err := tc.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("filters[0].typed_config: %w", err)
	}
	hcm, ok := cfg.(*hcmv3.HttpConnectionManager)
	if !ok {
		return nil, fmt.Errorf("filters[0].typed_config: network filter %s is not supported by Outrigger", cfg.ProtoReflect().Descriptor().FullName())
	}
	m, err := httpconn.New(hcm, httpconn.Deps{
		Log:                s.logs.Logger("http"),
		Stats:              s.stats,
		ListenerStatPrefix: scope,
		Upstreams:          s.upstreams(),
		Drain:              drain,
		Health:             s,
		Extensions:         s.ext,
		AccessLogs:         s.accessLogContext(),
		Runtime:            runtimeValues{s.runtime},
		Tracing:            s.tracingContext(),
		DefaultTracer:      s.defaultTracer(),
		Egress:             egress,
		Overload:           s.httpOverload(),
		Now:                s.clock,
	})
	if err != nil {
		// One line, with its full path, per problem.
		return nil, errors.Join(listener.PrefixErrors("filters[0].typed_config.", err)...)
	}
	// validate_clusters, whose default is true for an inline route
	// configuration, in static and discovered listeners alike, as in
	// Envoy. The first unknown cluster is reported, as Envoy reports it.
	if errs := router.ValidateClusters(hcm.GetRouteConfig(), true, s.clusterExists); len(errs) > 0 {
		_ = m.Close()
		return nil, fmt.Errorf("filters[0].typed_config.route_config.%w", errs[0])
	}
	return m, nil
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
	for _, m := range bl.managers {
		_ = m.Close()
	}
}

// accessLogContext is what the server gives access loggers: its
// destinations, gRPC channels to its clusters, the node, stats and the
// access-log logger.
func (s *Server) accessLogContext() accesslog.SinkContext {
	return accesslog.SinkContext{
		Open:     s.openAccessLog,
		OpenGRPC: s.openGRPC,
		Node:     s.boot.GetNode(),
		Stats:    s.stats,
		Log:      s.logs.Logger("grpc"),
	}
}

// openGRPC opens the channel of a GrpcService; an envoy_grpc service
// reaches its cluster through the cluster manager.
func (s *Server) openGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
	return grpcservice.Open(gs, grpcservice.Context{Cluster: func(name string) grpcservice.Cluster {
		if s.clusters == nil {
			return nil
		}
		if c := s.clusters.Cluster(name); c != nil {
			return c
		}
		return nil
	}})
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
