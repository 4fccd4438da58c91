package admin

import (
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// statsWriteTimeout bounds one write of a stats render to its client. A
// client that stops reading ends its own response after this long instead
// of holding a goroutine (and a render in progress) forever; a client that
// reads, however slowly, is never cut off.
const statsWriteTimeout = 30 * time.Second

// Help texts of the stats parameters, shared by /stats and
// /stats/prometheus (Envoy's wording).
const (
	usedOnlyHelp     = "Only include stats that have been written by system since restart"
	filterHelp       = "Regular expression (Google re2) for filtering stats"
	textReadoutsHelp = "Render text_readouts as new gauges with value 0 (increases Prometheus data size)"
	bucketsHelp      = "Histogram bucket display mode"
)

// statsFamily serves the stats endpoints from one StatsSource.
type statsFamily struct {
	src          StatsSource
	naming       stats.Naming
	writeTimeout time.Duration
	pages        statsPageTemplates
}

// statsRoutes returns the routes of the /stats family: the renders
// (/stats, /stats/prometheus), the recent-lookups table and its switches,
// and /reset_counters. Without a StatsSource there are none.
func (a *Admin) statsRoutes() []Route {
	if a.opts.Stats == nil {
		return nil
	}
	f := &statsFamily{src: a.opts.Stats, naming: a.opts.PrometheusNaming, writeTimeout: statsWriteTimeout, pages: parseStatsPageTemplates()}
	return f.routes()
}

// statsParams are the parameters of /stats, for /help, the home page and
// the form of the stats pages. Formats are listed in Envoy's order, so the
// forms open the HTML page by default.
func statsParams() []Param {
	return []Param{
		{Name: "usedonly", Help: usedOnlyHelp, Kind: ParamFlag},
		{Name: "filter", Help: filterHelp, Kind: ParamString},
		{Name: "format", Help: "Format to use", Kind: ParamEnum,
			Values: []string{"html", "active-html", "text", "json", "prometheus"}},
		{Name: "type", Help: "Stat types to include.", Kind: ParamEnum,
			Values: []string{"All", "Counters", "Histograms", "Gauges", "TextReadouts"}},
		{Name: "histogram_buckets", Help: bucketsHelp, Kind: ParamEnum,
			Values: []string{"cumulative", "disjoint", "detailed", "summary"}},
		{Name: "text_readouts", Help: textReadoutsHelp + "; only with format=prometheus", Kind: ParamFlag},
	}
}

// routes is the family's route table.
func (f *statsFamily) routes() []Route {
	return []Route{
		{
			Path:    "/stats",
			Help:    "print server stats",
			Params:  statsParams(),
			Handler: func(w *Response, r *Request) { f.serveRender(w, r, false) },
		},
		{
			Path: "/stats/prometheus",
			Help: "print server stats in prometheus format",
			Params: []Param{
				{Name: "usedonly", Help: usedOnlyHelp, Kind: ParamFlag},
				{Name: "text_readouts", Help: textReadoutsHelp, Kind: ParamFlag},
				{Name: "filter", Help: filterHelp, Kind: ParamString},
				{Name: "histogram_buckets", Help: bucketsHelp, Kind: ParamEnum,
					Values: []string{"cumulative", "summary"}},
			},
			Handler: func(w *Response, r *Request) { f.serveRender(w, r, true) },
		},
		{
			Path:    "/stats/recentlookups",
			Help:    "Show recent stat-name lookups",
			Handler: f.serveRecentLookups,
		},
		{
			Path:    "/stats/recentlookups/clear",
			Help:    "clear list of stat-name lookups and counter",
			Mutates: true,
			Handler: f.serveRecentLookupsClear,
		},
		{
			Path:    "/stats/recentlookups/disable",
			Help:    "disable recording of reset stat-name lookup names",
			Mutates: true,
			Handler: f.serveRecentLookupsDisable,
		},
		{
			Path:    "/stats/recentlookups/enable",
			Help:    "enable recording of reset stat-name lookup names",
			Mutates: true,
			Handler: f.serveRecentLookupsEnable,
		},
		{
			Path:    "/reset_counters",
			Help:    "reset all counters to zero",
			Mutates: true,
			Handler: f.serveResetCounters,
		},
	}
}
