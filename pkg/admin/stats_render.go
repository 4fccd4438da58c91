package admin

import (
	"context"
	"io"
	"net/http"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ContentTypePrometheus is the content type of the Prometheus text
// exposition format 0.0.4 (/stats/prometheus, /stats?format=prometheus).
// Envoy sends its plain-text fallback; the versioned type lets scrapers
// pick the right parser without guessing.
const ContentTypePrometheus = "text/plain; version=0.0.4; charset=utf-8"

// serveRender answers /stats (prometheus false) and /stats/prometheus
// (prometheus true): it validates every parameter first, so that a
// mistake gets 400 before anything is flushed or written, then streams
// the render to the client chunk by chunk. Memory does not grow with the
// number of stats, and a client that stops reading only ends its own
// response (see streamWriter).
func (f *statsFamily) serveRender(w *Response, r *Request, prometheus bool) {
	q, err := parseStatsQuery(r.Params, f.src.FilterUsesRE2(), prometheus)
	if err != nil {
		w.Text(http.StatusBadRequest, err.Error())
		return
	}
	if q.format == formatActiveHTML {
		// The page fetches the stats itself, as JSON.
		if err := f.renderActive(w, r); err != nil {
			w.Fail(err)
		}
		return
	}
	if q.render.Filter != nil {
		q.render.Filter = stopOnDone{ctx: r.Context(), f: q.render.Filter}
	}
	f.src.FlushForAdmin()

	var render func(io.Writer, *stats.Store, stats.RenderOptions) error
	switch q.format {
	case formatHTML:
		setHTMLHeaders(w, "")
		render = func(out io.Writer, _ *stats.Store, _ stats.RenderOptions) error {
			return f.renderHTML(out, r, q)
		}
	case formatJSON:
		w.SetContentType(ContentTypeJSON)
		render = stats.RenderJSON
	case formatPrometheus:
		w.SetContentType(ContentTypePrometheus)
		q.render.Naming = f.naming
		q.render.Help = statHelp
		render = stats.RenderPrometheus
	default:
		render = stats.RenderText
	}
	out := newStreamWriter(w, f.writeTimeout)
	defer out.release()
	if err := render(out, f.src.Store(), q.render); err != nil && !out.failed() {
		// Not the client's doing: the renderer itself failed.
		w.Fail(err)
	}
}

// stopOnDone makes a filter reject every name once ctx is done. A render
// whose names are all filtered out writes nothing, so it would not notice
// that its client left; with this it walks the remaining names without
// matching them, which takes milliseconds, instead of running on (for up to
// 100 ms per name with a backtracking ECMAScript pattern) for nobody.
type stopOnDone struct {
	ctx context.Context
	f   stats.Filter
}

func (s stopOnDone) Match(name []byte) bool { return s.ctx.Err() == nil && s.f.Match(name) }

// LiteralPrefix is the filter's own (see stats.PrefixedFilter).
func (s stopOnDone) LiteralPrefix() string {
	if p, ok := s.f.(stats.PrefixedFilter); ok {
		return p.LiteralPrefix()
	}
	return ""
}
