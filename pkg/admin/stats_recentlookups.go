package admin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// lookupsDisabled opens /stats/recentlookups while tracking is off and no
// name was kept (Envoy's words).
const lookupsDisabled = "Lookup tracking is not enabled. Use /stats/recentlookups/enable to enable.\n"

// serveRecentLookups answers the table of the stat names recently looked up
// by string (the slow path that components should avoid on the request
// path), least looked up first, then the total number of lookups, which
// accumulates even while names are not tracked.
func (f *statsFamily) serveRecentLookups(w *Response, _ *Request) {
	names, total, enabled := f.src.Store().RecentLookups()
	var b strings.Builder
	if len(names) == 0 && !enabled {
		b.WriteString(lookupsDisabled)
	} else {
		b.WriteString("   Count Lookup\n")
		for _, l := range names {
			fmt.Fprintf(&b, "%8d %s\n", l.Count, l.Name)
		}
	}
	fmt.Fprintf(&b, "\ntotal: %d\n", total)
	w.Text(http.StatusOK, b.String())
}

// serveRecentLookupsEnable starts tracking names (Envoy keeps 100).
func (f *statsFamily) serveRecentLookupsEnable(w *Response, _ *Request) {
	f.src.Store().SetRecentLookupsCapacity(stats.RecentLookupsCapacity)
	w.Text(http.StatusOK, "OK\n")
}

// serveRecentLookupsDisable stops tracking names and forgets them; the total
// is kept and keeps counting.
func (f *statsFamily) serveRecentLookupsDisable(w *Response, _ *Request) {
	f.src.Store().SetRecentLookupsCapacity(0)
	w.Text(http.StatusOK, "OK\n")
}

// serveRecentLookupsClear forgets the names and zeroes the total; tracking
// stays as it was.
func (f *statsFamily) serveRecentLookupsClear(w *Response, _ *Request) {
	f.src.Store().ClearRecentLookups()
	w.Text(http.StatusOK, "OK\n")
}
