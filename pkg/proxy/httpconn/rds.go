package httpconn

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// CompiledRoutes is a route configuration compiled for one connection
// manager, ready to be swapped in: route discovery compiles a response's
// configurations for every manager before any of them changes.
type CompiledRoutes struct{ st *routeState }

// CompileRoutes compiles a route configuration from route discovery with
// the manager's per-route filter configurations. Errors are relative to
// the route configuration.
func (m *Manager) CompileRoutes(rc *routev3.RouteConfiguration) (CompiledRoutes, error) {
	table, err := router.CompileWith(rc, m.routeOpts)
	if err != nil {
		return CompiledRoutes{}, err
	}
	return CompiledRoutes{st: &routeState{table: table, stats: newRouteLevelStats(m.deps.Stats, table)}}, nil
}

// SetRoutes makes compiled routes the manager's: requests that start
// afterwards use them, those in flight keep the table they started with.
func (m *Manager) SetRoutes(r CompiledRoutes) {
	if r.st != nil {
		m.rt.Store(r.st)
	}
}
