package server

import (
	"errors"
	"fmt"
	"net"
	"sync"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// adminConfig is the compiled part of the bootstrap's admin that the
// admin listener applies: allow_paths, socket_options and
// ignore_global_conn_limit.
type adminConfig struct {
	// allow are admin.allow_paths; empty allows every path.
	allow []router.StringMatcher
	// sockopts are admin.socket_options, set on the admin socket.
	sockopts sockopt.Set
	// enforceGlobal is false with ignore_global_conn_limit: the admin
	// connections then stay out of the global downstream connection
	// limit, neither counted nor refused, as Envoy's listeners with the
	// flag take no share of the overload manager's connections resource.
	enforceGlobal bool
}

// compileAdminConfig compiles the bootstrap's admin fields the listener
// applies. Errors name their path under admin.
func compileAdminConfig(a *bootstrapv3.Admin) (adminConfig, error) {
	cfg := adminConfig{enforceGlobal: !a.GetIgnoreGlobalConnLimit()}
	var errs []error
	for i, m := range a.GetAllowPaths() {
		sm, err := router.CompileStringMatcher(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("admin.allow_paths[%d]: %w", i, err))
			continue
		}
		cfg.allow = append(cfg.allow, sm)
	}
	so, err := sockopt.Compile(a.GetSocketOptions())
	errs = append(errs, fieldpath.Prefix("admin.socket_options", err))
	cfg.sockopts = so
	return cfg, errors.Join(errs...)
}

// AdminAllowPath returns admin.allow_paths as the admin checks them: true
// when one of the matchers matches the request's path (with its query, as
// Envoy's matchers see the :path header), nil when the list is empty and
// every path is allowed.
func (s *Server) AdminAllowPath() func(pathAndQuery string) bool {
	allow := s.adminCfg.allow
	if len(allow) == 0 {
		return nil
	}
	return func(p string) bool {
		for i := range allow {
			if allow[i].Match(p) {
				return true
			}
		}
		return false
	}
}

// globalLimitedListener counts the admin listener's connections against
// the global downstream connection limit, as Envoy's admin listener does
// unless admin.ignore_global_conn_limit is set: a connection past the
// limit is closed at once and counted in
// listener.admin.downstream_global_cx_overflow.
type globalLimitedListener struct {
	net.Listener
	overload interface {
		AcquireConnection(enforce bool) bool
		ReleaseConnection()
	}
	overflow *stats.Counter
}

// Accept returns the next connection the global limit admits.
func (l *globalLimitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.overload.AcquireConnection(true) {
			l.overflow.Inc()
			_ = c.Close()
			continue
		}
		return &globalCountedConn{Conn: c, release: l.overload.ReleaseConnection}, nil
	}
}

// globalCountedConn ends its count in the global limit when it closes.
type globalCountedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and releases its count, once.
func (c *globalCountedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
