package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// subsetEndpoints are the hosts of Envoy's subset documentation, on ports
// 1 to 4.
const subsetEndpoints = `
  load_assignment:
    cluster_name: web
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        metadata: {filter_metadata: {envoy.lb: {v: "1.0", stage: prod}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}
        metadata: {filter_metadata: {envoy.lb: {v: "1.0", stage: prod}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}
        metadata: {filter_metadata: {envoy.lb: {v: "1.1", stage: canary}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 4}}}
        metadata: {filter_metadata: {envoy.lb: {v: "1.2-pre", stage: dev}}}`

func TestSubsetConfigErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"locality_weight_aware without locality weights": {
			yaml: `
- name: web
  lb_subset_config: {locality_weight_aware: true, subset_selectors: [{keys: [a]}]}`,
			want: []string{"static_resources.clusters[0].lb_subset_config.locality_weight_aware: requires common_lb_config.locality_weighted_lb_config"},
		},
		"with an ORIGINAL_DST cluster": {
			yaml: `
- name: web
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  lb_subset_config: {subset_selectors: [{keys: [a]}]}`,
			want: []string{"static_resources.clusters[0].lb_subset_config: cannot be combined with lb_policy CLUSTER_PROVIDED (an ORIGINAL_DST cluster's hosts are not known in advance)"},
		},
		"fallback keys without KEYS_SUBSET": {
			yaml: `
- name: web
  lb_subset_config: {subset_selectors: [{keys: [a, b], fallback_keys_subset: [a]}]}`,
			want: []string{"static_resources.clusters[0].lb_subset_config.subset_selectors[0].fallback_keys_subset: fallback_keys_subset can be set only for KEYS_SUBSET fallback_policy"},
		},
		"KEYS_SUBSET without fallback keys": {
			yaml: `
- name: web
  lb_subset_config: {subset_selectors: [{keys: [a, b], fallback_policy: KEYS_SUBSET}]}`,
			want: []string{"static_resources.clusters[0].lb_subset_config.subset_selectors[0].fallback_keys_subset: fallback_keys_subset cannot be empty"},
		},
		"fallback keys not among the keys": {
			yaml: `
- name: web
  lb_subset_config: {subset_selectors: [{keys: [a, b], fallback_policy: KEYS_SUBSET, fallback_keys_subset: [c]}]}`,
			want: []string{"static_resources.clusters[0].lb_subset_config.subset_selectors[0].fallback_keys_subset: fallback_keys_subset must be a subset of selector keys"},
		},
		"fallback keys equal to the keys": {
			yaml: `
- name: web
  lb_subset_config: {subset_selectors: [{keys: [a, b], fallback_policy: KEYS_SUBSET, fallback_keys_subset: [b, a]}]}`,
			want: []string{"static_resources.clusters[0].lb_subset_config.subset_selectors[0].fallback_keys_subset: fallback_keys_subset cannot be equal to keys"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore()})
			if diff := cmp.Diff(tc.want, errorLines(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if err != nil {
				configErrors(t, err)
			}
		})
	}
}

// criteriaCtx is a pick context with metadata_match criteria of strings.
func criteriaCtx(kv ...string) *upstream.PickContext {
	fields := map[string]*structpb.Value{}
	for i := 0; i+1 < len(kv); i += 2 {
		fields[kv[i]] = structpb.NewStringValue(kv[i+1])
	}
	return &upstream.PickContext{MetadataMatch: upstream.NewMetadataMatch(fields)}
}

// ports returns the sorted distinct ports of n picks ("none" for no host).
func ports(c *Cluster, ctx *upstream.PickContext, n int) string {
	seen := map[string]bool{}
	for range n {
		h := c.PickHost(ctx)
		if h == nil {
			seen["none"] = true
			continue
		}
		seen[h.Address[strings.LastIndexByte(h.Address, ':')+1:]] = true
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestSubsetCluster(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: web
  lb_subset_config:
    fallback_policy: DEFAULT_SUBSET
    default_subset: {stage: prod}
    subset_selectors:
    - keys: [stage]
      fallback_policy: NO_FALLBACK
    - keys: [v, stage]`+subsetEndpoints)
	web := m.Cluster("web")
	for _, tc := range []struct {
		ctx  *upstream.PickContext
		want string
	}{
		{criteriaCtx("stage", "canary"), "3"},
		{criteriaCtx("v", "1.2-pre", "stage", "dev"), "4"},
		{criteriaCtx("v", "1.0"), "1 2"},
		{criteriaCtx("other", "x"), "1 2"},
		{&upstream.PickContext{}, "1 2"},
		{nil, "1 2"},
		{criteriaCtx("stage", "test"), "none"},
	} {
		if got := ports(web, tc.ctx, 4); got != tc.want {
			t.Errorf("criteria %v: ports %s, want %s", tc.ctx, got, tc.want)
		}
	}
	stat := func(name string) uint64 { return store.Counter("cluster.web." + name).Value() }
	if got := store.Gauge("cluster.web.lb_subsets_active").Value(); got != 6 {
		t.Errorf("lb_subsets_active = %d, want 6", got)
	}
	want := map[string]uint64{"lb_subsets_created": 6, "lb_subsets_selected": 8, "lb_subsets_fallback": 16, "lb_subsets_removed": 0,
		"lb_subsets_fallback_panic": 0, "upstream_cx_none_healthy": 4}
	got := map[string]uint64{}
	for name := range want {
		got[name] = stat(name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}

	// The canary host leaves: its subsets go.
	web.SetHosts([][]*upstream.Host{slices.DeleteFunc(web.Hosts(), func(h *upstream.Host) bool { return strings.HasSuffix(h.Address, ":3") })})
	if got := ports(web, criteriaCtx("stage", "canary"), 2); got != "none" {
		t.Errorf("after the canary left, stage=canary: ports %s, want none", got)
	}
	if got, removed := store.Gauge("cluster.web.lb_subsets_active").Value(), stat("lb_subsets_removed"); got != 4 || removed != 2 {
		t.Errorf("lb_subsets_active %d, lb_subsets_removed %d: want 4 and 2", got, removed)
	}
}

func TestSubsetsOffWithoutSelectors(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: web
  lb_subset_config: {fallback_policy: NO_FALLBACK}`+subsetEndpoints)
	if got := ports(m.Cluster("web"), criteriaCtx("stage", "canary"), 4); got != "1 2 3 4" {
		t.Errorf("ports %s, want every host", got)
	}
	if s := m.Cluster("web").settings; len(s.notes) != 1 || !strings.Contains(s.notes[0], "no subset_selectors") {
		t.Errorf("notes %q, want one about the selectors", s.notes)
	}
}
