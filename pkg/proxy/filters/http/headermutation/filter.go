package headermutation

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
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
	var scratch [4]httpfilter.RouteConfig
	cfgs := s.RouteConfigs(c.name, scratch[:0])
	r := runner{s: s, h: h, response: response}
	r.run(c.own)
	if c.mostSpecificWins {
		for _, rc := range cfgs {
			r.run(rc)
		}
	} else {
		for i := len(cfgs) - 1; i >= 0; i-- {
			r.run(cfgs[i])
		}
	}
	if r.trailers == nil {
		return
	}
	if response {
		s.TransformResponseBody(r.trailers)
	} else {
		s.TransformRequestBody(r.trailers)
	}
}

// runner applies the mutations of one direction of one stream, and finds
// the stream's access-log entry the first time a value needs it.
type runner struct {
	s        httpfilter.Stream
	h        router.HeaderEditor
	response bool
	entry    *accesslog.Entry
	// trailers collects the trailer edits of the Mutations that have
	// some, in the order they run.
	trailers *trailerEdits
}

// run applies one Mutations' request or response edits, in order.
func (r *runner) run(rc httpfilter.RouteConfig) {
	m, ok := rc.(*mutations)
	if !ok {
		return
	}
	list, tlist := m.request, m.requestTrailers
	if r.response {
		list, tlist = m.response, m.responseTrailers
	}
	var e *accesslog.Entry
	if m.formats {
		e = r.logEntry()
	}
	if len(tlist) > 0 {
		if r.trailers == nil {
			r.trailers = &trailerEdits{}
			if e != nil {
				// A copy: the trailers arrive on the body's own
				// goroutine, after the stream's entry has moved on.
				c := *e
				r.trailers.entry = &c
			}
		}
		r.trailers.lists = append(r.trailers.lists, tlist)
	}
	for _, ed := range list {
		if ed.match != nil {
			removeMatching(r.h, ed.match)
			continue
		}
		ed.ops.Apply(r.h, e)
	}
	if !r.response && len(m.query) > 0 {
		// As in Envoy, only a request with a :path (not CONNECT's).
		if p := r.s.Request().Path; p != "" {
			r.s.SetPath(mutateQuery(p, m.query, e))
		}
	}
}

// logEntry is what % operators read: the stream's entry, and for the
// response a copy that also shows the response headers being edited
// (%RESP(...)%), which the stream's own entry shows only once they have
// left.
func (r *runner) logEntry() *accesslog.Entry {
	if r.entry != nil {
		return r.entry
	}
	e := httpfilter.CurrentEntry(r.s)
	if r.response {
		c := *e
		c.ResponseHeaders = r.h
		e = &c
	}
	r.entry = e
	return e
}

// removeMatching removes the headers whose name m matches.
func removeMatching(h router.HeaderEditor, m *router.StringMatcher) {
	if d, ok := h.(router.HeaderMatchRemover); ok {
		d.DelMatching(m.Match)
		return
	}
	// A header map without DelMatching: collect the names, then remove
	// them.
	rg, ok := h.(interface {
		Range(fn func(name, value string) bool)
	})
	if !ok {
		return
	}
	var names []string
	rg.Range(func(name, _ string) bool {
		if m.Match(name) {
			names = append(names, name)
		}
		return true
	})
	for _, n := range names {
		h.Del(n)
	}
}
