package admin

import (
	"slices"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fakeStats is a StatsSource over a real store.
type fakeStats struct {
	rec    *recorder
	store  *stats.Store
	useRE2 bool
}

func (f *fakeStats) Store() *stats.Store { return f.store }

func (f *fakeStats) FlushForAdmin() { f.rec.add("Stats.FlushForAdmin") }

func (f *fakeStats) FilterUsesRE2() bool {
	f.rec.add("Stats.FilterUsesRE2")
	return f.useRE2
}

// sampleStore holds a fixed set of every kind of stat, used and unused,
// with names that tag extraction splits and values that need escaping.
func sampleStore(t testing.TB) *stats.Store {
	t.Helper()
	s := stats.NewStore()

	s.TextReadout("server.version_text").Set("1.2.3")
	s.TextReadout("control_plane.identifier").Set("say \"hi\"\n\\back")
	s.TextReadout("server.unset_text")

	s.Counter("cluster.c1.upstream_cx_total").Add(10)
	s.Counter("cluster.c2.upstream_cx_total").Add(20)
	s.Counter("cluster.c1.upstream_rq_200").Add(7)
	s.Counter("cluster.c1.upstream_rq_503").Add(2)
	s.Counter("http.admin.downstream_rq_4xx").Add(2)
	s.Counter("listener.admin.http.admin.downstream_rq_4xx").Add(2)
	s.Counter("listener.127.0.0.1_10000.downstream_cx_total").Add(3)
	s.Counter("An.artist.plays-violin@019street").Inc()
	s.Counter("server.unused_counter")

	s.Gauge("cluster.c1.upstream_cx_active").Set(11)
	s.Gauge("server.live").Set(1)
	s.Gauge("server.unused_gauge")

	rq := s.HistogramWithUnit("cluster.c1.upstream_rq_time", stats.UnitMilliseconds)
	for _, v := range []uint64{1, 5, 50, 200, 5000} {
		rq.Record(v)
	}
	admin := s.HistogramWithUnit("http.admin.downstream_rq_time", stats.UnitMilliseconds)
	admin.Record(3)
	s.MergeHistograms()
	// A second interval: rq_time has new values, the admin's has none.
	rq.Record(7)
	rq.Record(300)
	s.MergeHistograms()
	s.HistogramWithUnit("server.initialization_time_ms", stats.UnitMilliseconds)
	return s
}

// statsCase is one request to the stats family, checked against a golden
// file and the exact calls the source received.
type statsCase struct {
	useECMAScript bool
	empty         bool // an empty store instead of sampleStore
	req           request
	calls         []string
}

// renderCalls are the source calls of a render that passed validation.
var renderCalls = []string{"Stats.FilterUsesRE2", "Stats.FlushForAdmin"}

// refusedCalls are the source calls of a render refused with 400.
var refusedCalls = []string{"Stats.FilterUsesRE2"}

// newStatsAdmin is an admin whose only family is the stats one.
func newStatsAdmin(t testing.TB, src *fakeStats) *Admin {
	t.Helper()
	return New(Options{Stats: src, Log: (&logSink{}).logger()})
}

// runStatsCases runs cases on fresh sample stores; the golden file of case
// "x" of family "f" is testdata/f-x.golden.
func runStatsCases(t *testing.T, family string, cases map[string]statsCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: !tc.useECMAScript}
			if tc.empty {
				src.store = stats.NewStore()
			}
			rec := serve(t, newStatsAdmin(t, src).Handler(), tc.req)
			checkResponseGolden(t, family+"-"+name, rec)
			if got := src.rec.take(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls on the source = %q, want %q", got, tc.calls)
			}
		})
	}
}
