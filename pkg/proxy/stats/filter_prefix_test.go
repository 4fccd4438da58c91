package stats

import (
	"regexp"
	"slices"
	"testing"
)

// TestAnchoredLiteral: only a pattern anchored at the start of the text,
// case-sensitive, has a literal every match starts with.
func TestAnchoredLiteral(t *testing.T) {
	for pattern, want := range map[string]string{
		`^cluster_manager\.active_clusters$`: "cluster_manager.active_clusters",
		`^cluster\.c0\.`:                     "cluster.c0.",
		`\Acluster`:                          "cluster",
		`^(?:abc|abd)x`:                      "ab",
		`cluster`:                            "",
		`(?i)^cluster`:                       "",
		`(?m)^cluster`:                       "",
		`^a|^b`:                              "",
		`^.*x`:                               "",
		`^`:                                  "",
		`^[`:                                 "",
	} {
		if got := anchoredLiteral(pattern); got != want {
			t.Errorf("anchoredLiteral(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// TestPrefixedFilterVisitsWhatMatches: a Visit with an anchored filter,
// which skips the subtrees that cannot match, lists exactly the names the
// pattern matches among all the store's names, used or not.
func TestPrefixedFilterVisitsWhatMatches(t *testing.T) {
	s := NewStore()
	for _, name := range []string{
		"cluster.a.x", "cluster.a.y", "cluster.b.x", "cluster.bb.x", "cluster_manager.active_clusters",
		"cluster_manager.cds.update_success", "clusterx.z", "cluster", "clu", "http.ingress.rq", "a.b.c.d",
	} {
		s.Counter(name)
	}
	s.Gauge("cluster.b.y").Set(1)
	s.Counter("cluster.a.x").Inc()
	s.Histogram("cluster.b.t").Record(1)
	s.TextReadout("cluster.b.v").Set("v")
	all := func(o VisitOptions) []string {
		var out []string
		if err := s.Visit(o, func(st *Stat) error {
			out = append(out, string(st.Name))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, pattern := range []string{
		`^cluster\.b\.`, `^cluster\.b`, `^cluster`, `^cluster_manager\.active_clusters$`, `^clu`,
		`^cluster\.(a|b)\.x$`, `^cluster\.`, `^a\.b\.c\.d$`, `^a\.b\.`, `^zz`, `b\.x`,
	} {
		f, err := NewRE2Filter(pattern)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(pattern)
		for _, used := range []bool{false, true} {
			want := slices.DeleteFunc(all(VisitOptions{UsedOnly: used}), func(n string) bool { return !re.MatchString(n) })
			if got := all(VisitOptions{UsedOnly: used, Filter: f}); !slices.Equal(got, want) {
				t.Errorf("%s usedonly=%v: visited %q, want %q", pattern, used, got, want)
			}
		}
	}
}
