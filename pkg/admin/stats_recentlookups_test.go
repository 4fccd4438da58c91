package admin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// lookupStep is one request of a recent-lookups scenario, after which the
// test looks names up by string.
type lookupStep struct {
	req     request
	lookups []string // names looked up after the request
}

// TestRecentLookups walks the specification's state table: collection off
// (only the total counts), enable, clear, disable (the total survives), and
// GET on a mutation (refused, no effect). Each step's answer is a golden
// file, followed by the table as it then reads.
func TestRecentLookups(t *testing.T) {
	for name, steps := range map[string][]lookupStep{
		"disabled": {
			{req: request{target: "/stats/recentlookups"}, lookups: []string{"a", "b"}},
			{req: request{target: "/stats/recentlookups"}},
		},
		"enable": {
			{req: request{method: "POST", target: "/stats/recentlookups/enable"},
				lookups: []string{"alpha", "beta", "alpha", "gamma", "alpha", "beta"}},
			{req: request{target: "/stats/recentlookups"}},
		},
		"clear-enabled": {
			{req: request{method: "POST", target: "/stats/recentlookups/enable"}, lookups: []string{"x", "y"}},
			{req: request{method: "POST", target: "/stats/recentlookups/clear"}},
			{req: request{target: "/stats/recentlookups"}, lookups: []string{"z"}},
			{req: request{target: "/stats/recentlookups"}},
		},
		"clear-disabled": {
			{req: request{target: "/stats/recentlookups"}, lookups: []string{"x"}},
			{req: request{method: "POST", target: "/stats/recentlookups/clear"}},
			{req: request{target: "/stats/recentlookups"}},
		},
		"disable-keeps-total": {
			{req: request{method: "POST", target: "/stats/recentlookups/enable"}, lookups: []string{"x", "y"}},
			{req: request{method: "POST", target: "/stats/recentlookups/disable"}, lookups: []string{"z"}},
			{req: request{target: "/stats/recentlookups"}},
		},
		"reset-counters-clears": {
			{req: request{method: "POST", target: "/stats/recentlookups/enable"}, lookups: []string{"x"}},
			{req: request{method: "POST", target: "/reset_counters"}},
			{req: request{target: "/stats/recentlookups"}},
		},
		"enable-with-get-refused": {
			{req: request{target: "/stats/recentlookups/enable"}, lookups: []string{"x"}},
			{req: request{target: "/stats/recentlookups"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := &fakeStats{rec: &recorder{}, store: stats.NewStore(), useRE2: true}
			h := newStatsAdmin(t, src).Handler()
			var transcript strings.Builder
			for i, step := range steps {
				rec := serve(t, h, step.req)
				method := step.req.method
				if method == "" {
					method = "GET"
				}
				fmt.Fprintf(&transcript, "%d. %s %s -> %d %s\n%s\n", i+1, method, step.req.target,
					rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
				for _, n := range step.lookups {
					src.store.Counter(n)
				}
			}
			checkGolden(t, "stats_recentlookups-"+name, []byte(transcript.String()))
			if calls := src.rec.take(); len(calls) != 0 {
				t.Errorf("calls on the source = %q, want none", calls)
			}
		})
	}
}
