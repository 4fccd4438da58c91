package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// fixtureStore builds the store every golden file renders: the names of a
// small real server, a text readout with characters to escape, histograms
// used and unused, a flushed interval and a newer, unflushed one.
func fixtureStore(t testing.TB) *Store {
	t.Helper()
	s, err := NewStoreWithConfig(&metricsv3.StatsConfig{
		HistogramBucketSettings: []*metricsv3.HistogramBucketSettings{{
			Match:   &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "custom."}},
			Buckets: []float64{10, 1, 100},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Counter("cluster.c1.upstream_cx_total").Add(10)
	s.Counter("cluster.c2.upstream_cx_total").Add(20)
	s.Counter("cluster.my-svc.upstream_rq_200").Add(3)
	s.Counter("cluster.my.upstream_rq_503").Add(1)
	s.Gauge("cluster.c1.upstream_cx_active").Set(11)
	s.Gauge("cluster.c2.upstream_cx_active").Set(12)
	s.Counter("http.admin.downstream_rq_4xx").Add(2)
	s.Counter("listener.admin.http.admin.downstream_rq_4xx").Add(2)
	s.Counter("listener.0.0.0.0_10000.downstream_cx_total").Add(7)
	s.Counter("server.dynamic_unknown_fields")
	s.Gauge("server.live").Set(1)
	s.Gauge("server.state").Set(0)
	s.Gauge("runtime.admin_overrides_active")
	s.TextReadout("server.version_text").Set(`say "hi"\ok` + "\n")
	s.TextReadout("control_plane.identifier")
	h := s.HistogramWithUnit("cluster.c1.upstream_rq_time", UnitMilliseconds)
	for _, v := range []uint64{1, 5, 20, 200, 300, 3000} {
		h.Record(v)
	}
	s.Histogram("server.initialization_time_ms") // never recorded
	c := s.Histogram("custom.size")
	c.Record(5)
	c.Record(50)
	s.MergeHistograms()
	h.Record(7) // interval 2 is not flushed: cumulative only after merge
	s.MergeHistograms()
	return s
}

// fixtureHelp describes some of the fixture's stats, one of them with the
// characters a HELP line escapes.
func fixtureHelp(stat string) string {
	switch stat {
	case "cluster.upstream_cx_total":
		return "Upstream connections opened."
	case "cluster.upstream_rq_time":
		return `Request time \ in ms` + "\nsecond line"
	case "server.live":
		return "1 when the server is not draining."
	}
	return ""
}

func mustRE2(t *testing.T, p string) Filter {
	t.Helper()
	f, err := NewRE2Filter(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRenderGolden(t *testing.T) {
	s := fixtureStore(t)
	type render func(*bytes.Buffer, *Store, RenderOptions) error
	text := func(b *bytes.Buffer, s *Store, o RenderOptions) error { return RenderText(b, s, o) }
	js := func(b *bytes.Buffer, s *Store, o RenderOptions) error { return RenderJSON(b, s, o) }
	prom := func(b *bytes.Buffer, s *Store, o RenderOptions) error { return RenderPrometheus(b, s, o) }
	cases := []struct {
		name   string
		render render
		opts   RenderOptions
	}{
		{"text.txt", text, RenderOptions{}},
		{"text_usedonly.txt", text, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}},
		{"text_filter.txt", text, RenderOptions{VisitOptions: VisitOptions{Filter: mustRE2(t, `^cluster\.c1\.`)}}},
		{"text_filter_usedonly.txt", text, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true, Filter: mustRE2(t, "upstream")}}},
		{"text_type_gauges.txt", text, RenderOptions{VisitOptions: VisitOptions{Type: TypeGauges}}},
		{"text_cumulative.txt", text, RenderOptions{Buckets: BucketsCumulative}},
		{"text_disjoint.txt", text, RenderOptions{Buckets: BucketsDisjoint}},
		{"text_detailed.txt", text, RenderOptions{Buckets: BucketsDetailed}},
		{"json.json", js, RenderOptions{}},
		{"json_usedonly.json", js, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}},
		{"json_filter.json", js, RenderOptions{VisitOptions: VisitOptions{Filter: mustRE2(t, "c1")}}},
		{"json_cumulative.json", js, RenderOptions{Buckets: BucketsCumulative}},
		{"json_disjoint.json", js, RenderOptions{Buckets: BucketsDisjoint}},
		{"json_detailed.json", js, RenderOptions{Buckets: BucketsDetailed}},
		{"json_nomatch.json", js, RenderOptions{VisitOptions: VisitOptions{Filter: mustRE2(t, "^nothing$")}}},
		{"json_usedonly_no_histograms.json", js, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true, Filter: mustRE2(t, "server")}}},
		{"prometheus.txt", prom, RenderOptions{Buckets: BucketsCumulative}},
		{"prometheus_usedonly.txt", prom, RenderOptions{Buckets: BucketsCumulative, VisitOptions: VisitOptions{UsedOnly: true}}},
		{"prometheus_text_readouts.txt", prom, RenderOptions{Buckets: BucketsCumulative, TextReadouts: true}},
		{"prometheus_summary.txt", prom, RenderOptions{Buckets: BucketsSummary}},
		{"prometheus_filter.txt", prom, RenderOptions{Buckets: BucketsCumulative, VisitOptions: VisitOptions{Filter: mustRE2(t, "cluster")}}},
		{"prometheus_envoy_help.txt", prom, RenderOptions{Buckets: BucketsCumulative, TextReadouts: true, Naming: NamingEnvoy, Help: fixtureHelp}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b, s, tc.opts); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, b.Bytes())
			switch {
			case tc.name[:4] == "json":
				if !json.Valid(b.Bytes()) {
					t.Errorf("output is not valid JSON")
				}
			case tc.name[:4] == "prom":
				if err := checkExposition(b.String()); err != nil {
					t.Errorf("output is not valid exposition format: %v", err)
				}
			}
		})
	}
}

func TestRenderEmptyStore(t *testing.T) {
	s := NewStore()
	cases := map[string]struct {
		render func(*bytes.Buffer) error
		want   string
	}{
		"text":       {func(b *bytes.Buffer) error { return RenderText(b, s, RenderOptions{}) }, ""},
		"json":       {func(b *bytes.Buffer) error { return RenderJSON(b, s, RenderOptions{}) }, `{"stats":[]}`},
		"prometheus": {func(b *bytes.Buffer) error { return RenderPrometheus(b, s, RenderOptions{}) }, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// failingWriter fails every write, like a client that went away.
type failingWriter struct{ writes int }

var errGone = errors.New("client gone")

func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	return 0, errGone
}

func TestRenderStopsAtWriteError(t *testing.T) {
	s := NewStore()
	for i := range 20000 {
		s.Counter("c." + itoa(i)).Inc()
	}
	renders := map[string]func(*failingWriter) error{
		"text":       func(w *failingWriter) error { return RenderText(w, s, RenderOptions{}) },
		"json":       func(w *failingWriter) error { return RenderJSON(w, s, RenderOptions{}) },
		"prometheus": func(w *failingWriter) error { return RenderPrometheus(w, s, RenderOptions{}) },
	}
	for name, render := range renders {
		t.Run(name, func(t *testing.T) {
			w := &failingWriter{}
			if err := render(w); !errors.Is(err, errGone) {
				t.Fatalf("err = %v, want %v", err, errGone)
			}
			if w.writes != 1 {
				t.Errorf("writes after the first failure: %d, want 1 in all", w.writes)
			}
		})
	}
}

func TestParseHistogramBuckets(t *testing.T) {
	cases := map[string]struct {
		in         string
		want       HistogramBuckets
		wantErr    error
		prom       HistogramBuckets
		promErrNil bool
	}{
		"empty":      {"", BucketsSummary, nil, BucketsCumulative, true},
		"summary":    {"summary", BucketsSummary, nil, BucketsSummary, true},
		"none":       {"none", BucketsSummary, nil, 0, false},
		"cumulative": {"cumulative", BucketsCumulative, nil, BucketsCumulative, true},
		"disjoint":   {"disjoint", BucketsDisjoint, nil, 0, false},
		"detailed":   {"detailed", BucketsDetailed, nil, 0, false},
		"bad":        {"Cumulative", 0, ErrInvalidBuckets, 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseHistogramBuckets(tc.in)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Errorf("ParseHistogramBuckets(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			pg, perr := ParsePrometheusHistogramBuckets(tc.in)
			if (perr == nil) != tc.promErrNil || (perr == nil && pg != tc.prom) {
				t.Errorf("ParsePrometheusHistogramBuckets(%q) = %v, %v", tc.in, pg, perr)
			}
			if perr != nil && !errors.Is(perr, ErrPrometheusBuckets) {
				t.Errorf("prometheus error %v does not wrap ErrPrometheusBuckets", perr)
			}
		})
	}
}
