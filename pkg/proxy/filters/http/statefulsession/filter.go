package statefulsession

import (
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the filter's configured name, the key of its per-route
	// configuration.
	name     string
	settings *settings
	pool     sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	if f, ok := c.pool.Get().(*filter); ok {
		return f
	}
	return &filter{cfg: c}
}

// filter is one request's filter.
type filter struct {
	cfg *filterConfig
	// active is set once DecodeHeaders found the session state applying
	// to the request; s are the settings it used (the route's or the
	// filter's), addr the address the request's session named ("" for
	// none).
	active bool
	s      *settings
	addr   string
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: the most specific route
// configuration disables the filter or replaces its settings; the
// session's address, when the request has one, becomes the request's
// override host.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	set := f.cfg.settings
	if rc, ok := s.RouteConfig(f.cfg.name).(*routeConfig); ok {
		if rc.disabled {
			return httpfilter.Continue
		}
		set = rc.settings
	}
	if set.state == nil {
		return httpfilter.Continue
	}
	addr, applies := set.state.Address(s.Request().Path, s.RequestHeaders())
	if !applies {
		return httpfilter.Continue
	}
	f.active, f.s, f.addr = true, set, addr
	if addr != "" {
		s.SetUpstreamOverrideHost(upstream.OverrideHost{Address: addr, Strict: set.strict, MissingStatus: set.missingStatus})
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: a response from a host
// names it in the session when the request's session named another (or
// none); the stats count what became of the session's host.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.active {
		return httpfilter.Continue
	}
	host := s.Info().UpstreamHost
	st := f.s.stats
	if host == "" {
		// No host was picked: a strict session whose host could not be
		// picked failed closed (or the request was answered before it
		// went upstream, which Envoy counts alike).
		if st != nil && f.addr != "" && f.s.strict {
			st.failedClosed.Inc()
		}
		return httpfilter.Continue
	}
	changed := f.s.state.Update(f.addr, host, s.ResponseHeaders())
	if st != nil && f.addr != "" {
		switch {
		case !changed:
			st.routed.Inc()
		case !f.s.strict:
			st.failedOpen.Inc()
		}
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: the filter goes back to its
// pool.
func (f *filter) OnDestroy() {
	c := f.cfg
	*f = filter{cfg: c}
	c.pool.Put(f)
}
