package stats

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// populate creates the named stats ("c name", "g name", "t name", "h
// name") and writes each once, so that every render mode shows them.
func populate(s *Store, specs []string) {
	for _, spec := range specs {
		kind, name := spec[:1], spec[2:]
		switch kind {
		case "c":
			s.Counter(name).Add(uint64(len(name)))
		case "g":
			s.Gauge(name).Set(int64(len(name)))
		case "t":
			s.TextReadout(name).Set(name)
		case "h":
			s.Histogram(name).Record(uint64(len(name)))
		}
	}
}

func renderProm(t *testing.T, s *Store, o RenderOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := RenderPrometheus(&b, s, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// baseStats are the stats every case starts from: enough that a few new
// ones are merged into the family index rather than rebuilding it.
func baseStats() []string {
	var out []string
	for i := range 40 {
		out = append(out,
			fmt.Sprintf("c cluster.svc_%02d.upstream_rq_200", i),
			fmt.Sprintf("c cluster.svc_%02d.upstream_cx_total", i),
			fmt.Sprintf("g cluster.svc_%02d.upstream_cx_active", i),
		)
	}
	return append(out, "c server.x", "t server.version", "h cluster.svc_00.upstream_rq_time", "h cluster.svc_07.upstream_rq_time")
}

// TestFamilyIndexIncremental checks that placing new stats into a built
// family index gives the same exposition as a store that had every stat
// from the start (whose index is built in one walk).
func TestFamilyIndexIncremental(t *testing.T) {
	cases := map[string][]string{
		"into an existing family, in the middle": {"c cluster.svc_15a.upstream_rq_200"},
		"at the start of a family":               {"c cluster.a.upstream_cx_total", "c cluster.svc.upstream_cx_total"},
		"at the end of a family":                 {"c cluster.svc_99.upstream_rq_200", "c cluster.zzz.upstream_rq_200"},
		"a new family sorting first":             {"c aaa.first"},
		"a new family among others":              {"c cluster.svc_03.upstream_rq_retry", "c cluster.svc_01.upstream_rq_retry"},
		"names sharing a family's prefix":        {"c cluster.svc-1.upstream_rq_200", "c cluster.svc.1.upstream_rq_200", "c cluster.svc_1.upstream_rq_200"},
		"a gauge under a counter's prefix":       {"g cluster.svc_05.upstream_rq_pending_active"},
		"a histogram and a text readout":         {"h cluster.svc_03.upstream_rq_time", "t server.hot_restart"},
		"several families at once":               {"c cluster.svc_20x.upstream_rq_200", "g cluster.b.upstream_cx_active", "c http.admin.downstream_rq_2xx", "c server.y"},
	}
	opts := map[string]RenderOptions{
		"all":          {TextReadouts: true},
		"usedonly":     {VisitOptions: VisitOptions{UsedOnly: true}},
		"summary":      {Buckets: BucketsSummary},
		"filter":       {VisitOptions: VisitOptions{Filter: mustRE2(t, `svc_0`)}, TextReadouts: true},
		"no histogram": {},
	}
	for name, added := range cases {
		t.Run(name, func(t *testing.T) {
			base := baseStats()
			if 8*len(added) >= len(base) {
				t.Fatalf("%d new stats for %d would rebuild the index, not place them", len(added), len(base))
			}
			incremental := NewStore()
			populate(incremental, base)
			renderProm(t, incremental, RenderOptions{TextReadouts: true}) // builds the index
			populate(incremental, added)
			placedBefore := incremental.families.kinds[KindCounter].placed

			fresh := NewStore()
			populate(fresh, append(append([]string(nil), base...), added...))
			for oname, o := range opts {
				got, want := renderProm(t, incremental, o), renderProm(t, fresh, o)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: incremental index differs from a fresh one (-fresh +incremental):\n%s", oname, diff)
				}
				if err := checkExposition(got); err != nil {
					t.Errorf("%s: %v", oname, err)
				}
			}
			if placedBefore == 0 {
				t.Error("the first render did not build the index")
			}
		})
	}
}

// TestFamilyIndexOrder checks families and series order on names whose
// byte order differs from their segment order ('-' sorts before '.' and
// '_' after it), and that names whose tag-extracted forms sanitise to one
// metric name share one family.
func TestFamilyIndexOrder(t *testing.T) {
	s := NewStore()
	populate(s, []string{"c b.x", "c a-b.c", "c a.b.c", "c a_b.c", "c cluster.my-svc.rq", "c cluster.my.rq", "c cluster.my_svc.rq"})
	want := "# TYPE proxy_a_b_c counter\n" +
		"proxy_a_b_c{} 5\n" +
		"proxy_a_b_c{} 5\n" +
		"proxy_a_b_c{} 5\n" +
		"# TYPE proxy_b_x counter\n" +
		"proxy_b_x{} 3\n" +
		"# TYPE proxy_cluster_rq counter\n" +
		`proxy_cluster_rq{proxy_cluster_name="my-svc"} 17` + "\n" +
		`proxy_cluster_rq{proxy_cluster_name="my"} 13` + "\n" +
		`proxy_cluster_rq{proxy_cluster_name="my_svc"} 17` + "\n"
	if got := renderProm(t, s, RenderOptions{}); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestFamilyIndexSeesStatsAddedBetweenRenders renders, adds stats in bulk
// (a rebuild) and one at a time (placements), and checks each render shows
// every stat.
func TestFamilyIndexSeesStatsAddedBetweenRenders(t *testing.T) {
	s := NewStore()
	total := 0
	for round, batch := range []int{1, 50, 1, 1, 200, 3, 1} {
		for range batch {
			s.Counter(fmt.Sprintf("cluster.c%d.rq", total)).Inc()
			total++
		}
		got := bytes.Count([]byte(renderProm(t, s, RenderOptions{})), []byte("\nproxy_cluster_rq{"))
		if got != total {
			t.Fatalf("round %d: %d series rendered, want %d", round, got, total)
		}
	}
}
