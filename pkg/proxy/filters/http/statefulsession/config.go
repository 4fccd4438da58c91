// Package statefulsession is the stateful session HTTP filter
// (envoy.filters.http.stateful_session): sticky sessions. A session
// state extension (pkg/proxy/sessionstate: a cookie or a header) reads
// the upstream address the request's session names; the filter asks the
// cluster for that host before its load balancer (upstream.OverrideHost),
// and, once the response is known, has the session state name the host
// that served it when it differs. With strict, a request whose host the
// cluster cannot pick fails instead of being balanced.
package statefulsession

import (
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ssv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.stateful_session"

// Factory builds the filter.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// settings is one compiled StatefulSession: the filter's, or a route's.
type settings struct {
	// state is nil without session_state: the filter then does nothing,
	// as Envoy's empty session state factory.
	state  sessionstate.State
	strict bool
	// missingStatus is status_on_strict_destination_not_found (0: 503).
	missingStatus int
	// stats are nil without stat_prefix (and for a route's settings).
	stats *filterStats
}

// filterStats are the filter's counters, under
// http.<stat_prefix>.stateful_session.<stat_prefix>.
type filterStats struct {
	// routed: the request went to the host its session named.
	routed *stats.Counter
	// failedOpen: the session's host could not be picked and the
	// balancer chose another (not strict).
	failedOpen *stats.Counter
	// failedClosed: the session's host could not be picked and the
	// strict request failed.
	failedClosed *stats.Counter
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*ssv3.StatefulSession)
	if !ok {
		return nil, errors.New("not a StatefulSession")
	}
	s, err := compile(c, ctx)
	if err != nil {
		return nil, err
	}
	if p := c.GetStatPrefix(); p != "" {
		if ctx.Stats == nil {
			return nil, errors.New("no stat store")
		}
		sc := ctx.Stats.Scope(ctx.StatPrefix + "stateful_session." + p + ".")
		s.stats = &filterStats{
			routed:       sc.Counter("routed"),
			failedOpen:   sc.Counter("failed_open"),
			failedClosed: sc.Counter("failed_closed"),
		}
	}
	return &filterConfig{name: ctx.Name, settings: s}, nil
}

// routeConfig is a compiled StatefulSessionPerRoute.
type routeConfig struct {
	// disabled turns the filter off for the route; otherwise settings
	// replace the filter's.
	disabled bool
	settings *settings
}

// CompileRoute implements httpfilter.RouteFactory. A route's settings
// have no stats, as in Envoy, whatever their stat_prefix.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*ssv3.StatefulSessionPerRoute)
	if !ok {
		return nil, errors.New("not a StatefulSessionPerRoute")
	}
	switch o := c.GetOverride().(type) {
	case *ssv3.StatefulSessionPerRoute_Disabled:
		if !o.Disabled {
			// PGV's const: true refuses it; kept for a config that
			// skipped validation.
			return nil, errors.New("disabled: must be true")
		}
		return &routeConfig{disabled: true}, nil
	case *ssv3.StatefulSessionPerRoute_StatefulSession:
		s, err := compile(o.StatefulSession, ctx)
		if err != nil {
			return nil, httpfilter.PrefixErrors("stateful_session.", err)
		}
		return &routeConfig{settings: s}, nil
	}
	return nil, errors.New("override: one of disabled or stateful_session is required")
}

// compile compiles the settings of a StatefulSession but its stats.
func compile(c *ssv3.StatefulSession, ctx httpfilter.Context) (*settings, error) {
	s := &settings{strict: c.GetStrict()}
	if c.GetStrict() && c.GetStatusOnStrictDestinationNotFound() != 0 {
		code := c.GetStatusOnStrictDestinationNotFound()
		if code < 200 || code > 599 {
			return nil, fmt.Errorf("status_on_strict_destination_not_found: %d is not an HTTP status (200 to 599)", code)
		}
		s.missingStatus = int(code)
	}
	if tec := c.GetSessionState(); tec != nil {
		st, err := compileState(tec, ctx)
		if err != nil {
			return nil, err
		}
		s.state = st
	}
	return s, nil
}

// compileState resolves and compiles session_state.
func compileState(tec *corev3.TypedExtensionConfig, ctx httpfilter.Context) (sessionstate.State, error) {
	if ctx.Extensions == nil {
		return nil, errors.New("session_state: no extension registry")
	}
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "session state", Category: sessionstate.Category, Name: tec.GetName(), Config: tec.GetTypedConfig(),
	}, ctx.LookupByName)
	if err != nil {
		return nil, fmt.Errorf("session_state.%w", err)
	}
	f, ok := ext.Factory.(sessionstate.Factory)
	if !ok {
		return nil, fmt.Errorf("session_state.typed_config: extension %q is not a session state", ext.Name)
	}
	st, err := f.CompileSessionState(msg, sessionstate.Context{Monotonic: monotonic})
	if err != nil {
		return nil, httpfilter.PrefixErrors("session_state.typed_config.", err)
	}
	return st, nil
}

// monotonic reads CLOCK_MONOTONIC, the clock of Envoy's monotonicTime on
// Linux, in which cookies' expiry counts.
func monotonic() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
