package httpconn

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// CompiledRoutes is a route configuration compiled for one connection
// manager, ready to be swapped in: route discovery compiles a response's
// configurations for every manager before any of them changes. Compiled
// routes that are not set must be discarded (Discard).
type CompiledRoutes struct{ st *routeState }

// CompileRoutes compiles a route configuration from route discovery with
// the manager's per-route filter configurations. Errors are relative to
// the route configuration.
func (m *Manager) CompileRoutes(rc *routev3.RouteConfiguration) (CompiledRoutes, error) {
	st, err := compileRoutes(rc, m.routeFilter, m.clusterSpecifiers, m.deps.Stats, m.deps.Extensions)
	if err != nil {
		return CompiledRoutes{}, err
	}
	return CompiledRoutes{st: st}, nil
}

// SetRoutes makes compiled routes the manager's: requests that start
// afterwards use them, those in flight keep the table they started with.
// The per-route filter configurations of the table replaced are closed
// once the last of those requests ends.
func (m *Manager) SetRoutes(r CompiledRoutes) {
	if r.st != nil {
		m.setRoutes(r.st)
	}
}

// Discard closes compiled routes that will not be set (another part of
// the same update was rejected).
func (r CompiledRoutes) Discard() {
	if r.st != nil {
		r.st.release()
	}
}
