package matchdelegate

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// filter is one request's wrapper around the wrapped filter's.
type filter struct {
	cfg   *config
	inner httpfilter.Filter
	// tree is the matcher of the request: the route's, else the
	// wrapper's.
	tree *httpmatch.Matcher[*action]
	// decided is set once the matcher has a result; skip when that
	// result skips the wrapped filter.
	decided, skip bool
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: the matcher runs on the
// request headers, then the wrapped filter, unless skipped.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.tree = f.cfg.tree
	if rc, ok := s.RouteConfig(f.cfg.name).(*routeMatcher); ok {
		f.tree = rc.tree
	}
	f.evaluate(s, false)
	if d, ok := f.inner.(httpfilter.Decoder); ok && !f.skip {
		return d.DecodeHeaders(s)
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: a matcher still waiting
// for the response runs on it, then the wrapped filter, unless skipped.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.evaluate(s, true)
	if e, ok := f.inner.(httpfilter.Encoder); ok && !f.skip {
		return e.EncodeHeaders(s)
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: the wrapped filter was made
// for the request, skipped or not.
func (f *filter) OnDestroy() {
	if d, ok := f.inner.(httpfilter.Destroyer); ok {
		d.OnDestroy()
	}
}

// evaluate runs the matcher until it has a result, then acts on it once.
func (f *filter) evaluate(s httpfilter.Stream, response bool) {
	if f.decided {
		return
	}
	if f.tree == nil {
		// Envoy reads a wrapper without a matcher as a skip.
		f.decided, f.skip = true, true
		return
	}
	a, matched, complete := Evaluate(f.tree, s, response)
	if !complete {
		return
	}
	f.decided = true
	switch {
	case !matched || a == nil:
	case a.skip:
		f.skip = true
	default:
		if af, ok := f.inner.(ActionFilter); ok {
			af.OnMatch(s, a.value)
		}
	}
}
