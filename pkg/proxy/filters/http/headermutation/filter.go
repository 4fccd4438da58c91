package headermutation

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// filterConfig is the compiled filter: its name (the key of its per-route
// configurations), its own mutations and the order of the per-route ones.
// It keeps no state per request, so it is its own filter.
type filterConfig struct {
	name             string
	own              *mutations
	mostSpecificWins bool
}

var (
	_ httpfilter.Decoder = (*filterConfig)(nil)
	_ httpfilter.Encoder = (*filterConfig)(nil)
)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: the request mutations.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c.apply(s, s.RequestHeaders(), false)
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: the response mutations.
func (c *filterConfig) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c.apply(s, s.ResponseHeaders(), true)
	return httpfilter.Continue
}

// apply runs the filter's own mutations, then the per-route ones. As in
// Envoy, the per-route ones run most specific first (so that the route
// table's have the last word) unless most_specific_header_mutations_wins,
// which runs them least specific first.
func (c *filterConfig) apply(s httpfilter.Stream, h router.HeaderEditor, response bool) {
	run(c.own, h, response)
	var scratch [4]httpfilter.RouteConfig
	cfgs := s.RouteConfigs(c.name, scratch[:0])
	if c.mostSpecificWins {
		for _, rc := range cfgs {
			run(rc, h, response)
		}
		return
	}
	for i := len(cfgs) - 1; i >= 0; i-- {
		run(cfgs[i], h, response)
	}
}

// run applies one Mutations' request or response edits, in order.
func run(rc httpfilter.RouteConfig, h router.HeaderEditor, response bool) {
	m, ok := rc.(*mutations)
	if !ok {
		return
	}
	list := m.request
	if response {
		list = m.response
	}
	for _, e := range list {
		e.Apply(h, nil)
	}
}
