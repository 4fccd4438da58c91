package server

import (
	"errors"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/overload"
)

// newOverload builds the overload manager from the bootstrap's
// overload_manager (none configured still gives a manager: it enforces the
// overload.global_downstream_max_connections runtime key). It starts
// nothing; Run starts it. Errors name their configuration path.
func (s *Server) newOverload(cfg *overloadv3.OverloadManager) error {
	m, err := overload.New(cfg, overload.Deps{
		Stats:    s.stats,
		Log:      s.logs.Logger("main"),
		Runtime:  s.runtime,
		HostRoot: s.hostRoot,
	})
	if err != nil {
		return errors.Join(listener.PrefixErrors("overload_manager.", err)...)
	}
	s.overload = m
	return nil
}

// listenerOverload is the overload manager as the listeners consult it:
// nil (no limits, no actions) when it could not be built. The admin
// listener never gets it, as Envoy gives its admin a null overload
// manager.
func (s *Server) listenerOverload(lc *listenerv3.Listener) listener.Overload {
	if s.overload == nil || lc.GetBypassOverloadManager() {
		// bypass_overload_manager: as Envoy's null overload manager,
		// no action and no global connection limit apply.
		return nil
	}
	return s.overload
}

// httpOverload is the overload manager as the connection managers consult
// it; nil when it could not be built, or for a listener with
// bypass_overload_manager.
func (s *Server) httpOverload(bypass bool) httpconn.OverloadState {
	if s.overload == nil || bypass {
		return nil
	}
	return s.overload
}

// startOverload starts the overload manager's loops.
func (s *Server) startOverload() {
	if s.overload != nil {
		s.overload.Start()
	}
}

// stopOverload stops them.
func (s *Server) stopOverload() {
	if s.overload != nil {
		s.overload.Stop()
	}
}
