package composite

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// filter is one request's composite filter: it passes every step to the
// filter an action delegated to, and does nothing until then.
type filter struct {
	cfg       *config
	delegated httpfilter.Filter
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
	if !ok || f.delegated != nil || !f.cfg.sampled(d) {
		return
	}
	f.delegated = d.config.NewFilter()
	f.cfg.success.Inc()
}

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if d, ok := f.delegated.(httpfilter.Decoder); ok {
		return d.DecodeHeaders(s)
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if e, ok := f.delegated.(httpfilter.Encoder); ok {
		return e.EncodeHeaders(s)
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer.
func (f *filter) OnDestroy() {
	if d, ok := f.delegated.(httpfilter.Destroyer); ok {
		d.OnDestroy()
	}
}
