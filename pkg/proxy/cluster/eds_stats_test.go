package cluster

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestEDSStatsMadeWithTheCluster checks that an EDS cluster's subscription
// stats, made in the block of its other stats (extraEDSTemplate), are the
// stats of their names and kinds in its scope, and that a cluster of
// another type has none of them: its stats are those of an EDS cluster
// less the subscription's.
func TestEDSStatsMadeWithTheCluster(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: static
  load_assignment: {cluster_name: static, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}}]}]}
- name: backend
  type: EDS
  eds_cluster_config: {service_name: backend-svc}`)
	st := m.Cluster("backend").EDSStats()
	if st == nil {
		t.Fatal("an EDS cluster has no EDSStats")
	}
	scope := store.Scope("cluster.backend.")
	for name, got := range map[string]*stats.Counter{
		"update_attempt":     st.Attempt,
		"update_success":     st.Success,
		"update_failure":     st.Failure,
		"update_rejected":    st.Rejected,
		"init_fetch_timeout": st.InitFetchTimeout,
	} {
		if want := scope.Counter(name); got != want {
			t.Errorf("counter %s: %p, the scope's is %p", name, got, want)
		}
	}
	for name, got := range map[string]*stats.Gauge{"version": st.Version, "update_time": st.UpdateTime} {
		if want := scope.Gauge(name); got != want {
			t.Errorf("gauge %s: %p, the scope's is %p", name, got, want)
		}
	}
	if want := scope.TextReadout("version_text"); st.VersionText != want {
		t.Errorf("version_text: %p, the scope's is %p", st.VersionText, want)
	}
	if m.Cluster("static").EDSStats() != nil {
		t.Error("a STATIC cluster has EDSStats")
	}

	// The names under each cluster, with their kinds: the EDS cluster's
	// are the static one's and the subscription's.
	names := map[string]map[string]stats.Kind{}
	err := store.Visit(stats.VisitOptions{}, func(s *stats.Stat) error {
		for _, c := range []string{"static", "backend"} {
			if rest, ok := strings.CutPrefix(string(s.Name), "cluster."+c+"."); ok {
				if names[c] == nil {
					names[c] = map[string]stats.Kind{}
				}
				names[c][rest+" "+s.Kind.String()] = s.Kind
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for n := range names["backend"] {
		if _, ok := names["static"][n]; !ok {
			extra = append(extra, n)
		}
	}
	slices.Sort(extra)
	want := []string{"init_fetch_timeout counter", "update_rejected counter", "update_time gauge", "version_text text_readout"}
	if !slices.Equal(extra, want) {
		t.Errorf("the EDS cluster's own stats: %v, want %v", extra, want)
	}
	for n := range names["static"] {
		if _, ok := names["backend"][n]; !ok {
			t.Errorf("the static cluster has %s, the EDS one not", n)
		}
	}
	if len(names["static"]) < 100 {
		t.Errorf("the static cluster has only %d stats: %v", len(names["static"]), slices.Sorted(maps.Keys(names["static"])))
	}
}
