package cluster

import "testing"

// TestTrackClusterStats checks which histograms track_cluster_stats and
// the deprecated track_timeout_budgets ask for.
func TestTrackClusterStats(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: none
  connect_timeout: 1s
- name: budgets
  connect_timeout: 1s
  track_cluster_stats: {timeout_budgets: true}
- name: legacy
  connect_timeout: 1s
  track_timeout_budgets: true
- name: sizes
  connect_timeout: 1s
  track_cluster_stats: {request_response_sizes: true}
`)
	for _, tc := range []struct {
		name           string
		budgets, sizes bool
	}{
		{"none", false, false},
		{"budgets", true, false},
		{"legacy", true, false},
		{"sizes", false, true},
	} {
		tr := m.Cluster(tc.name).Stats().Tracked
		if (tr != nil) != (tc.budgets || tc.sizes) {
			t.Errorf("%s: tracked stats %v", tc.name, tr)
			continue
		}
		if tr == nil {
			continue
		}
		if (tr.TimeoutBudget != nil) != tc.budgets || (tr.Sizes != nil) != tc.sizes {
			t.Errorf("%s: timeout budgets %v, sizes %v; want %v, %v", tc.name, tr.TimeoutBudget != nil, tr.Sizes != nil, tc.budgets, tc.sizes)
		}
	}
}
