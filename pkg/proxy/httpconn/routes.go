package httpconn

import (
	"io"
	"sync"
	"sync/atomic"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"

	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// routeFilterFunc compiles a typed_per_filter_config entry
// (router.Options.FilterConfig).
type routeFilterFunc = func(name string, config *anypb.Any, optional bool) (any, error)

// clusterSpecifierFunc compiles a cluster specifier plugin
// (router.Options.ClusterSpecifier).
type clusterSpecifierFunc = func(ext *corev3.TypedExtensionConfig, optional bool) (router.ClusterSpecifier, error)

// routeState is a route table with the stats of its virtual clusters and
// stat_prefix routes (by their indexes in the table): swapped together.
// It owns the per-route filter configurations that hold resources
// (gRPC channels, script VMs, timers): they are closed once the table is
// no longer the manager's and the last request that read it has ended.
type routeState struct {
	table *router.Table
	stats routeLevelStats
	// closers are the table's per-route filter configurations that hold
	// resources, closed with the last reference.
	closers []io.Closer
	// refs counts the manager (while the table is its current one) and
	// every request that read it.
	refs      atomic.Int64
	closeOnce sync.Once
}

// compileRoutes compiles a route configuration with the per-route filter
// configurations filter compiles, keeping those that hold resources to
// close with the table. On error, those compiled so far are closed.
func compileRoutes(rc *routev3.RouteConfiguration, filter routeFilterFunc, plugins clusterSpecifierFunc, st *stats.Store, reg *extension.Registry) (*routeState, error) {
	var closers []io.Closer
	opts := router.Options{FilterConfig: func(name string, a *anypb.Any, optional bool) (any, error) {
		cfg, err := filter(name, a, optional)
		if c, ok := cfg.(io.Closer); ok && err == nil {
			closers = append(closers, c)
		}
		return cfg, err
	}, ClusterSpecifier: plugins, MetadataMatcher: compileRouteMetadataMatcher, Formatters: reg}
	table, err := router.CompileWith(rc, opts)
	if err != nil {
		closeAll(closers)
		return nil, err
	}
	rs := &routeState{table: table, stats: newRouteLevelStats(st, table), closers: closers}
	// The reference of the manager that will hold it.
	rs.refs.Store(1)
	return rs, nil
}

// release drops one reference; the last closes the per-route filter
// configurations.
func (rs *routeState) release() {
	if rs.refs.Add(-1) <= 0 {
		rs.closeOnce.Do(func() { closeAll(rs.closers) })
	}
}

// closeAll closes configurations that hold resources; their errors
// matter to nobody once they are unused.
func closeAll(cs []io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// routes returns the route table of the request, read from the manager
// on first use and kept, with a reference, until the request ends
// (releaseRoutes).
func (s *stream) routes() *routeState {
	if s.rt == nil {
		for {
			rt := s.m.rt.Load()
			rt.refs.Add(1)
			// A table swapped out between the load and the reference
			// may have been closed already: the request takes the new
			// one. One that stays (the manager's last, released when the
			// manager closed) is used as it is, as the connection
			// manager's own filters are.
			if s.m.rt.Load() == rt {
				s.rt = rt
				break
			}
			rt.release()
		}
	}
	return s.rt
}

// releaseRoutes gives back the request's reference on its route table,
// once no filter of the request runs any more.
func (s *stream) releaseRoutes() {
	if s.rt != nil {
		s.rt.release()
		s.rt = nil
	}
}

// setRoutes makes rs the manager's route table, releasing the one it
// replaces; after the manager has released its routes (Close), rs is
// released at once.
func (m *Manager) setRoutes(rs *routeState) {
	m.mu.Lock()
	if m.routesReleased {
		m.mu.Unlock()
		rs.release()
		return
	}
	old := m.rt.Swap(rs)
	m.mu.Unlock()
	if old != nil {
		old.release()
	}
}

// releaseRoutes drops the manager's reference on its route table: its
// per-route configurations close when the last request using it ends.
func (m *Manager) releaseRoutes() {
	m.mu.Lock()
	if m.routesReleased {
		m.mu.Unlock()
		return
	}
	m.routesReleased = true
	rt := m.rt.Load()
	m.mu.Unlock()
	rt.release()
}

// compileRouteMetadataMatcher compiles a route's dynamic_metadata matcher
// with the access-log filters' metadata matcher.
func compileRouteMetadataMatcher(mm *matcherv3.MetadataMatcher) (router.MetadataMatch, error) {
	return logfilter.CompileMetadataMatcher(mm)
}
