package cluster

import (
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// TestDropOverload checks that drop_overloads is read in each
// denominator and that a request is dropped when the cluster's draw falls
// within the ratio.
func TestDropOverload(t *testing.T) {
	var draw uint64
	m, _, _ := newTestManager(t, `
- name: hundred
  load_assignment: {cluster_name: hundred, policy: {drop_overloads: [{category: drop_overload, drop_percentage: {numerator: 25}}]}}
- name: ten_thousand
  load_assignment: {cluster_name: ten_thousand, policy: {drop_overloads: [{category: c, drop_percentage: {numerator: 2500, denominator: TEN_THOUSAND}}]}}
- name: million
  load_assignment: {cluster_name: million, policy: {drop_overloads: [{category: c, drop_percentage: {numerator: 250000, denominator: MILLION}}]}}
- name: all
  load_assignment: {cluster_name: all, policy: {drop_overloads: [{category: c, drop_percentage: {numerator: 100}}]}}
- name: none
  load_assignment: {cluster_name: none, policy: {drop_overloads: [{category: c, drop_percentage: {numerator: 0}}]}}
- name: plain`, func(o *Options) { o.Rand = func() uint64 { return draw } })
	for _, tc := range []struct {
		draw    uint64
		dropped map[string]bool
	}{
		{draw: 0, dropped: map[string]bool{"hundred": true, "ten_thousand": true, "million": true, "all": true}},
		{draw: 249_999, dropped: map[string]bool{"hundred": true, "ten_thousand": true, "million": true, "all": true}},
		{draw: 250_000, dropped: map[string]bool{"all": true}},
		{draw: 999_999, dropped: map[string]bool{"all": true}},
		{draw: 3_000_000 + 100, dropped: map[string]bool{"hundred": true, "ten_thousand": true, "million": true, "all": true}},
	} {
		draw = tc.draw
		for _, name := range []string{"hundred", "ten_thousand", "million", "all", "none", "plain"} {
			if got := m.Cluster(name).DropOverload(); got != tc.dropped[name] {
				t.Errorf("draw %d: %s DropOverload() = %v, want %v", tc.draw, name, got, tc.dropped[name])
			}
		}
	}
}

// TestEDSDropOverload checks drop_overloads in a discovered load
// assignment: one category applies with the assignment, a later
// assignment without it ends the drops, and more than one is refused
// with Envoy's message and its path.
func TestEDSDropOverload(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	drop := func(n uint32) *endpointv3.ClusterLoadAssignment_Policy_DropOverload {
		return &endpointv3.ClusterLoadAssignment_Policy_DropOverload{Category: "drop_overload", DropPercentage: &typev3.FractionalPercent{Numerator: n}}
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Policy: &endpointv3.ClusterLoadAssignment_Policy{
		DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{drop(100)},
	}}
	hs, err := c.EDSHosts(cla)
	if err != nil {
		t.Fatal(err)
	}
	if c.DropOverload() {
		t.Error("EDSHosts changed the drop ratio before SetEDSHosts")
	}
	c.SetEDSHosts(hs)
	if !c.DropOverload() {
		t.Error("a 100% drop_overloads does not drop")
	}

	cla.Policy.DropOverloads = append(cla.Policy.DropOverloads, drop(5))
	_, err = c.EDSHosts(cla)
	if want := "policy.drop_overloads: Cluster drop_overloads config has 2 categories. Envoy only support one."; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("EDSHosts error = %v, want %q", err, want)
	}

	hs, err = c.EDSHosts(&endpointv3.ClusterLoadAssignment{ClusterName: "backend"})
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(hs)
	if c.DropOverload() {
		t.Error("an assignment without drop_overloads still drops")
	}
}

// TestDropOverloadRuntimeLimit checks that the runtime's
// load_balancing_policy.drop_overload_limit (percent) caps the drop
// ratio as soon as it changes, and that a value above 100 caps nothing.
func TestDropOverloadRuntimeLimit(t *testing.T) {
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		{Name: "admin", LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}}},
	}}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var draw uint64
	m, _, _ := newTestManager(t, `
- name: all
  load_assignment: {cluster_name: all, policy: {drop_overloads: [{category: c, drop_percentage: {numerator: 100}}]}}`,
		func(o *Options) { o.Runtime = rt.Snapshot; o.Rand = func() uint64 { return draw } })
	c := m.Cluster("all")
	for _, tc := range []struct {
		limit string
		draw  uint64
		want  bool
	}{
		{limit: "30", draw: 299_999, want: true},
		{limit: "30", draw: 300_000, want: false},
		{limit: "0", draw: 0, want: false},
		{limit: "150", draw: 999_999, want: true},
	} {
		if err := rt.Modify(map[string]string{"load_balancing_policy.drop_overload_limit": tc.limit}); err != nil {
			t.Fatal(err)
		}
		draw = tc.draw
		if got := c.DropOverload(); got != tc.want {
			t.Errorf("limit %s, draw %d: DropOverload() = %v, want %v", tc.limit, tc.draw, got, tc.want)
		}
	}
}
