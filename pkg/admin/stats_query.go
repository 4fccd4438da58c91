package admin

import (
	"errors"
	"regexp/syntax"
	"strings"

	regexp2syntax "github.com/dlclark/regexp2/syntax"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// statsFormat is the output form of a stats render.
type statsFormat int

const (
	formatText statsFormat = iota
	formatJSON
	formatPrometheus
	formatHTML       // a page of the stats with the parameters' form (stats_html.go)
	formatActiveHTML // a page that refreshes the stats in place (stats_active.go)
)

// formatUsage answers an unknown ?format=, in Envoy's words.
const formatUsage = "usage: /stats?format=(html|active-html|json|prometheus|text)\n\n"

// statsQuery is a validated stats request: what to render, and how.
type statsQuery struct {
	format statsFormat
	render stats.RenderOptions
}

// badQuery is a client mistake in the parameters; its text is the whole
// body of the 400 answer.
type badQuery struct{ body string }

func (e *badQuery) Error() string { return e.body }

// parseStatsQuery validates the parameters of /stats (or of
// /stats/prometheus when prometheus is set, which forces that format) in
// Envoy's order: filter, histogram_buckets, type, format, then the bucket
// modes the Prometheus format allows. useRE2 selects the filter engine (the
// runtime key proxy.reloadable_features.admin_stats_filter_use_re2).
// Presence flags are on whatever their value, and an empty value counts as
// absent, as the home page's forms submit every field.
func parseStatsQuery(p Params, useRE2, prometheus bool) (statsQuery, error) {
	var q statsQuery
	q.render.UsedOnly = p.Has("usedonly")
	q.render.TextReadouts = p.Has("text_readouts")

	if pattern := p.Get("filter"); pattern != "" {
		f, err := compileStatsFilter(pattern, useRE2)
		if err != nil {
			return q, err
		}
		q.render.Filter = f
	}

	bucketsGiven := p.Get("histogram_buckets") != ""
	buckets, err := stats.ParseHistogramBuckets(p.Get("histogram_buckets"))
	if err != nil {
		return q, &badQuery{stats.HistogramBucketsUsage}
	}
	q.render.Buckets = buckets

	if q.render.Type, err = stats.ParseStatType(p.Get("type")); err != nil {
		return q, &badQuery{stats.ErrInvalidType.Error()}
	}

	switch p.Get("format") {
	case "", "text":
		q.format = formatText
	case "json":
		q.format = formatJSON
	case "prometheus":
		q.format = formatPrometheus
	case "html":
		q.format = formatHTML
	case "active-html":
		q.format = formatActiveHTML
	default:
		return q, &badQuery{formatUsage}
	}
	if prometheus {
		q.format = formatPrometheus
	}

	if q.format == formatPrometheus {
		// Prometheus shows cumulative buckets unless asked for summaries
		// ("summary", or its older spelling "none").
		switch {
		case !bucketsGiven:
			q.render.Buckets = stats.BucketsCumulative
		case buckets != stats.BucketsSummary && buckets != stats.BucketsCumulative:
			return q, &badQuery{stats.ErrPrometheusBuckets.Error()}
		}
	}
	return q, nil
}

// compileStatsFilter compiles ?filter= with the selected engine. A bad
// pattern is a client mistake whose answer carries the reason: RE2's with
// Envoy's "Invalid re2 regex" prefix, ECMAScript's in the form Envoy used
// for its std::regex engine.
func compileStatsFilter(pattern string, useRE2 bool) (stats.Filter, error) {
	if useRE2 {
		f, err := stats.NewRE2Filter(pattern)
		if err != nil {
			return nil, &badQuery{stats.InvalidRE2Body + ": " + re2Reason(err)}
		}
		return f, nil
	}
	f, err := stats.NewECMAScriptFilter(pattern)
	if err != nil {
		return nil, &badQuery{`Invalid regex: "` + ecmaScriptReason(err) + "\"\n"}
	}
	return f, nil
}

// regexpErrorPrefix starts the syntax errors of both engines; the rest is
// the reason and the offending expression.
const regexpErrorPrefix = "error parsing regexp: "

// re2Reason extracts what is wrong with an RE2 pattern, such as "missing
// closing ]: `[a`", without the wrapping of the layers it crossed.
func re2Reason(err error) string {
	if se, ok := errors.AsType[*syntax.Error](err); ok {
		return strings.TrimPrefix(se.Error(), regexpErrorPrefix)
	}
	return err.Error()
}

// ecmaScriptReason extracts what is wrong with an ECMAScript pattern.
func ecmaScriptReason(err error) string {
	if se, ok := errors.AsType[*regexp2syntax.Error](err); ok {
		return strings.TrimPrefix(se.Error(), regexpErrorPrefix)
	}
	return err.Error()
}
