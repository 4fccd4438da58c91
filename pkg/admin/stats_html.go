package admin

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// pageHead starts the stats pages; it takes a statsPage.
const pageHead = `<!DOCTYPE html>
<html lang='en'>
<head>
  <meta charset='UTF-8'>
  <title>Outrigger Admin: {{.Title}}</title>
  <link rel='icon' href='data:,'>
  <style>
` + pageStyle + `  </style>
</head>
<body>
<p class='nav'><a href='./'>home</a> | <a href='stats?format=html'>stats</a> | <a href='stats?format=active-html'>active stats</a></p>
<h1>{{.Title}}</h1>
`

// statsHTMLTemplate is the top of /stats?format=html: the parameters'
// form, filled in with the request's values. The stats follow, streamed by
// htmlStatsWriter.
const statsHTMLTemplate = pageHead + `<form action='stats' method='get' id='stats'>
<table class='home-table'>
<tbody>
{{- range .Params}}{{template "param" .}}{{end}}
</tbody>
</table>
<p><button>Apply</button></p>
</form>
`

// statsParamTemplate is one row of a stats page's form: the input of a
// statsFormParam, filled in, and its label.
const statsParamTemplate = `{{define "param"}}
<tr>
  <td class='option'>
  {{- if .Flag}}<input type='checkbox' name='{{.Name}}' id='{{.ID}}'{{if .Value}} checked{{end}}>
  {{- else if .Enum}}<select name='{{.Name}}' id='{{.ID}}'>
  {{- $value := .Value}}{{range .Values}}<option value='{{.}}'{{if eq . $value}} selected{{end}}>{{.}}</option>{{end}}</select>
  {{- else}}<input type='text' name='{{.Name}}' id='{{.ID}}' value='{{.Value}}' size='40'>
  {{- end}}</td>
  <td class='home-data'><label for='{{.ID}}'>{{.Help}}</label></td>
</tr>
{{- end}}`

// statsPage is what the stats pages' templates show.
type statsPage struct {
	Title  string
	Params []statsFormParam
	Nonce  string // of the active page's script
}

// statsFormParam is one input of a stats page's form, with its value.
type statsFormParam struct {
	ID, Name, Help string
	Flag, Enum     bool
	Values         []string
	Value          string // the text, the selected choice, or "on" for a set flag
}

// statsFormDefault is the choice a form shows for a parameter the request
// left out: what the render does without it.
func statsFormDefault(name string) string {
	switch name {
	case "type":
		return "All"
	case "histogram_buckets":
		return "summary"
	}
	return ""
}

// statsForm returns the inputs of the /stats parameters named in names (all
// of them when names is empty), in the route table's order, filled in from
// p; format shows the page being served.
func statsForm(p Params, format string, names ...string) []statsFormParam {
	var out []statsFormParam
	for _, sp := range statsParams() {
		if len(names) > 0 && !slices.Contains(names, sp.Name) {
			continue
		}
		fp := statsFormParam{
			ID:     "param-1-stats-" + sp.Name, // Envoy's ids, as on the home page
			Name:   sp.Name,
			Help:   sp.Help,
			Flag:   sp.Kind == ParamFlag,
			Enum:   sp.Kind == ParamEnum,
			Values: sp.Values,
			Value:  p.Get(sp.Name),
		}
		switch {
		case fp.Flag && p.Has(sp.Name):
			fp.Value = "on"
		case sp.Name == "format":
			fp.Value = format
		case fp.Value == "":
			fp.Value = statsFormDefault(sp.Name)
		}
		out = append(out, fp)
	}
	return out
}

// statsPageTemplates are the parsed templates of the stats pages.
type statsPageTemplates struct {
	html, active *template.Template
}

// parseStatsPageTemplates parses the stats pages' templates, which are
// constants: an error is a bug in this package, caught by its tests.
func parseStatsPageTemplates() statsPageTemplates {
	parse := func(name, text string) *template.Template {
		return template.Must(template.Must(template.New(name).Parse(statsParamTemplate)).Parse(text))
	}
	return statsPageTemplates{
		html:   parse("stats-html", statsHTMLTemplate),
		active: parse("stats-active", statsActiveTemplate),
	}
}

// renderHTML writes /stats?format=html: the form, then the stats selected by
// q in Envoy's three phases (text readouts, counters and gauges,
// histograms), each a table or a "No ... found" line, streamed like the
// other renders.
func (f *statsFamily) renderHTML(out io.Writer, r *Request, q statsQuery) error {
	var head bytes.Buffer
	page := statsPage{Title: "stats", Params: statsForm(r.Params, "html")}
	if err := f.pages.html.Execute(&head, page); err != nil {
		return fmt.Errorf("render stats page: %w", err)
	}
	hw := &htmlStatsWriter{out: out, buf: head.Bytes(), q: q}
	err := f.src.Store().Visit(q.render.VisitOptions, hw.stat)
	if err != nil {
		return err
	}
	hw.closeUpTo(numHTMLPhases)
	hw.buf = append(hw.buf, "</body>\n</html>\n"...)
	return hw.flush()
}

// The sections of the HTML stats page, in Visit's order.
const (
	phaseTextReadouts = iota
	phaseCountersGauges
	phaseHistograms
	numHTMLPhases
)

// phaseTitle is a section's heading, also used in its "No ... found" line.
func phaseTitle(p int) string {
	switch p {
	case phaseTextReadouts:
		return "Text readouts"
	case phaseCountersGauges:
		return "Counters and gauges"
	}
	return "Histograms"
}

// phaseOf returns the section of a stat kind.
func phaseOf(k stats.Kind) int {
	switch k {
	case stats.KindTextReadout:
		return phaseTextReadouts
	case stats.KindHistogram:
		return phaseHistograms
	}
	return phaseCountersGauges
}

// phaseShown reports whether ?type= includes section i.
func phaseShown(t stats.StatType, i int) bool {
	switch t {
	case stats.TypeAll:
		return true
	case stats.TypeTextReadouts:
		return i == phaseTextReadouts
	case stats.TypeHistograms:
		return i == phaseHistograms
	}
	return i == phaseCountersGauges // counters or gauges
}

// htmlStatsWriter writes the stats part of the HTML page in chunks,
// escaping every name and value. It opens a section at its first stat and
// closes it (with "No ... found" when it had none) when Visit moves on.
type htmlStatsWriter struct {
	out   io.Writer
	buf   []byte
	q     statsQuery
	phase int // the next section to open
	open  bool
	rows  int // rows in the open section
	// disjoint is scratch space for the disjoint bucket view.
	disjoint []uint64
}

// stat writes one stat, opening its section first.
func (h *htmlStatsWriter) stat(st *stats.Stat) error {
	p := phaseOf(st.Kind)
	if !h.open || h.phase-1 != p {
		h.closeUpTo(p)
		h.openPhase(p)
	}
	if h.rows == 0 {
		h.tableStart(p)
	}
	h.rows++
	h.buf = append(h.buf, "<tr><td>"...)
	h.escaped(st.Name)
	h.buf = append(h.buf, "</td>"...)
	switch st.Kind {
	case stats.KindTextReadout:
		h.buf = append(h.buf, "<td>&#34;"...)
		h.escaped([]byte(st.TextReadout.Value()))
		h.buf = append(h.buf, "&#34;</td>"...)
	case stats.KindCounter:
		h.buf = append(h.buf, "<td class='value'>"...)
		h.buf = strconv.AppendUint(h.buf, st.Counter.Value(), 10)
		h.buf = append(h.buf, "</td><td>counter</td>"...)
	case stats.KindGauge:
		h.buf = append(h.buf, "<td class='value'>"...)
		h.buf = strconv.AppendInt(h.buf, st.Gauge.Value(), 10)
		h.buf = append(h.buf, "</td><td>gauge</td>"...)
	case stats.KindHistogram:
		h.histogram(st.Histogram)
	}
	h.buf = append(h.buf, "</tr>\n"...)
	if len(h.buf) >= statsHTMLChunk {
		return h.flush()
	}
	return nil
}

// statsHTMLChunk is how much of the page is gathered before a write, as
// the other renders do.
const statsHTMLChunk = 64 << 10

// flush writes what is gathered.
func (h *htmlStatsWriter) flush() error {
	if len(h.buf) == 0 {
		return nil
	}
	_, err := h.out.Write(h.buf)
	h.buf = h.buf[:0]
	if err != nil {
		return fmt.Errorf("writing stats: %w", err)
	}
	return nil
}

// closeUpTo closes the open section and shows every section before end that
// ?type= selects but no stat opened, as empty.
func (h *htmlStatsWriter) closeUpTo(end int) {
	if h.open {
		h.closePhase()
	}
	for p := h.phase; p < end; p++ {
		if phaseShown(h.q.render.Type, p) {
			h.openPhase(p)
			h.closePhase()
		}
	}
	h.phase = max(h.phase, end)
}

// openPhase starts section p with its heading; its table starts at its
// first stat.
func (h *htmlStatsWriter) openPhase(p int) {
	h.phase, h.open, h.rows = p+1, true, 0
	h.buf = append(h.buf, "<h2>"...)
	h.buf = append(h.buf, phaseTitle(p)...)
	h.buf = append(h.buf, "</h2>\n"...)
}

// tableStart starts the table of section p.
func (h *htmlStatsWriter) tableStart(p int) {
	h.buf = append(h.buf, "<table class='stats'>\n<thead>"...)
	switch p {
	case phaseTextReadouts:
		h.buf = append(h.buf, "<tr><th>Name</th><th>Value</th></tr>"...)
	case phaseCountersGauges:
		h.buf = append(h.buf, "<tr><th>Name</th><th>Value</th><th>Type</th></tr>"...)
	default:
		h.histogramHead()
	}
	h.buf = append(h.buf, "</thead>\n<tbody>\n"...)
}

// closePhase ends the open section.
func (h *htmlStatsWriter) closePhase() {
	h.open = false
	if h.rows > 0 {
		h.buf = append(h.buf, "</tbody>\n</table>\n"...)
	} else {
		h.buf = append(h.buf, "<p class='none'>No "...)
		h.buf = append(h.buf, strings.ToLower(phaseTitle(h.phase-1))...)
		h.buf = append(h.buf, " found</p>\n"...)
	}
}

// histogramHead is the histograms' header row: one column per quantile in
// the summary view, one for the buckets or bins otherwise.
func (h *htmlStatsWriter) histogramHead() {
	h.buf = append(h.buf, "<tr><th>Name</th><th></th>"...)
	if h.q.render.Buckets != stats.BucketsSummary {
		h.buf = append(h.buf, "<th>"...)
		h.buf = append(h.buf, bucketsColumn(h.q.render.Buckets)...)
		h.buf = append(h.buf, "</th></tr>"...)
		return
	}
	for _, q := range stats.SupportedQuantiles() {
		h.buf = append(h.buf, "<th>P"...)
		h.buf = strconv.AppendFloat(h.buf, math.Round(q*1000)/10, 'g', -1, 64)
		h.buf = append(h.buf, "</th>"...)
	}
	h.buf = append(h.buf, "</tr>"...)
}

// bucketsColumn heads the histograms' column in the bucket views.
func bucketsColumn(b stats.HistogramBuckets) string {
	switch b {
	case stats.BucketsCumulative:
		return "upper bound: values at or below it"
	case stats.BucketsDisjoint:
		return "upper bound: values above the previous bound, up to it"
	}
	return "bins (lower bound, width: count)"
}

// histogram writes a histogram's cells: "No recorded values" when it has
// none, else an interval and a cumulative line.
func (h *htmlStatsWriter) histogram(hist *stats.Histogram) {
	if !hist.Used() {
		h.buf = append(h.buf, "<td></td><td class='none' colspan='"...)
		h.buf = strconv.AppendInt(h.buf, int64(stats.NumQuantiles), 10)
		h.buf = append(h.buf, "'>No recorded values</td>"...)
		return
	}
	in, cum := hist.IntervalStatistics(), hist.CumulativeStatistics()
	h.buf = append(h.buf, "<td>interval<br>cumulative</td>"...)
	switch h.q.render.Buckets {
	case stats.BucketsSummary:
		for i := range stats.NumQuantiles {
			h.buf = append(h.buf, "<td class='value'>"...)
			h.buf = appendQuantile(h.buf, in.Quantiles[i])
			h.buf = append(h.buf, "<br>"...)
			h.buf = appendQuantile(h.buf, cum.Quantiles[i])
			h.buf = append(h.buf, "</td>"...)
		}
	case stats.BucketsDetailed:
		h.buf = append(h.buf, "<td>"...)
		h.bins(in.Bins)
		h.buf = append(h.buf, "<br>"...)
		h.bins(cum.Bins)
		h.buf = append(h.buf, "</td>"...)
	default:
		h.buf = append(h.buf, "<td>"...)
		h.buckets(hist.Bounds(), &in)
		h.buf = append(h.buf, "<br>"...)
		h.buckets(hist.Bounds(), &cum)
		h.buf = append(h.buf, "</td>"...)
	}
}

// buckets writes "bound: count" pairs of one summary.
func (h *htmlStatsWriter) buckets(bounds []float64, s *stats.HistogramStatistics) {
	counts := s.Buckets
	if h.q.render.Buckets == stats.BucketsDisjoint {
		h.disjoint = s.DisjointBuckets(h.disjoint[:0])
		counts = h.disjoint
	}
	for i, b := range bounds {
		if i > 0 {
			h.buf = append(h.buf, ' ')
		}
		h.buf = strconv.AppendFloat(h.buf, b, 'g', 6, 64)
		h.buf = append(h.buf, ':')
		if i < len(counts) {
			h.buf = strconv.AppendUint(h.buf, counts[i], 10)
		}
	}
}

// bins writes "lower bound, width: count" triples of one summary.
func (h *htmlStatsWriter) bins(bins []stats.Bin) {
	for i, b := range bins {
		if i > 0 {
			h.buf = append(h.buf, "; "...)
		}
		h.buf = strconv.AppendFloat(h.buf, b.LowerBound, 'g', 15, 64)
		h.buf = append(h.buf, ", "...)
		h.buf = strconv.AppendFloat(h.buf, b.Width, 'g', 15, 64)
		h.buf = append(h.buf, ": "...)
		h.buf = strconv.AppendUint(h.buf, b.Count, 10)
	}
}

// escaped appends s escaped for HTML text.
func (h *htmlStatsWriter) escaped(s []byte) {
	b := bytes.NewBuffer(h.buf)
	template.HTMLEscape(b, s)
	h.buf = b.Bytes()
}

// appendQuantile formats a quantile as the text render does: the shortest
// form, "nan" when the interval had no values.
func appendQuantile(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "nan"...)
	case math.Abs(v) >= 1e-4 && math.Abs(v) < 1e16, v == 0:
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'e', -1, 64)
}
