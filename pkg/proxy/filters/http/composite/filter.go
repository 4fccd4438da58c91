package composite

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// filter is one request's composite filter: it passes every step to the
// filters an action delegated to (decoding in order, encoding in reverse
// order, as a chain of their own), and does nothing until then.
type filter struct {
	cfg       *config
	delegated []httpfilter.Filter
	// matched is set once an action ran: the match happens once.
	matched bool
	// decided is set once the composite's own matcher has a result;
	// resolved once tree holds the matcher of the request (the route's,
	// else the composite's), read once as Envoy resolves it.
	decided, resolved bool
	tree              *httpmatch.Matcher[*delegate]
}

var (
	_ httpfilter.Decoder         = (*filter)(nil)
	_ httpfilter.Encoder         = (*filter)(nil)
	_ httpfilter.Destroyer       = (*filter)(nil)
	_ matchdelegate.ActionFilter = (*filter)(nil)
)

// OnMatch implements matchdelegate.ActionFilter: the matched action's
// filter is made for this request, unless sample_percent leaves it out.
func (f *filter) OnMatch(_ httpfilter.Stream, action any) {
	d, ok := action.(*delegate)
	if !ok || f.matched {
		return
	}
	chain := d.chain
	if d.named != "" {
		chain = f.cfg.named[d.named]
	}
	if len(chain) == 0 || !f.cfg.sampled(d) {
		return
	}
	f.matched = true
	for _, c := range chain {
		f.delegated = append(f.delegated, c.NewFilter())
	}
	f.cfg.success.Inc()
}

// match runs the composite's own matcher (the route's, where it has a
// CompositePerRoute) until it has a result, then delegates to its
// action's filters.
func (f *filter) match(s httpfilter.Stream, response bool) {
	if f.decided {
		return
	}
	if !f.resolved {
		f.resolved, f.tree = true, f.cfg.tree
		if rc, ok := s.RouteConfig(f.cfg.name).(*routeMatcher); ok {
			f.tree = rc.tree
		}
	}
	if f.tree == nil {
		return
	}
	d, matched, complete := matchdelegate.Evaluate(f.tree, s, response)
	if !complete {
		return
	}
	f.decided = true
	if matched && d != nil {
		f.OnMatch(s, d)
	}
}

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.match(s, false)
	for _, df := range f.delegated {
		if d, ok := df.(httpfilter.Decoder); ok && d.DecodeHeaders(s) == httpfilter.Stop {
			return httpfilter.Stop
		}
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.match(s, true)
	for i := len(f.delegated) - 1; i >= 0; i-- {
		if e, ok := f.delegated[i].(httpfilter.Encoder); ok {
			e.EncodeHeaders(s)
		}
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer.
func (f *filter) OnDestroy() {
	for _, df := range f.delegated {
		if d, ok := df.(httpfilter.Destroyer); ok {
			d.OnDestroy()
		}
	}
}
