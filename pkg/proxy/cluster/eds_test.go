package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
)

func TestEDSCluster(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: static
  load_assignment: {cluster_name: static, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}}]}]}
- name: backend
  type: EDS
  eds_cluster_config: {service_name: backend-svc}
- name: plain
  type: EDS`)
	eds := m.EDSClusters()
	if len(eds) != 2 || eds[0].Name() != "backend" || eds[1].Name() != "plain" {
		t.Fatalf("EDSClusters = %v", eds)
	}
	if name, ok := eds[0].EDSServiceName(); !ok || name != "backend-svc" {
		t.Errorf("service name %q %v", name, ok)
	}
	if name, _ := eds[1].EDSServiceName(); name != "plain" {
		t.Errorf("a cluster without service_name is published under its name, got %q", name)
	}
	if _, ok := m.Cluster("static").EDSServiceName(); ok {
		t.Error("a STATIC cluster has an EDS service name")
	}
	if len(eds[0].Hosts()) != 0 {
		t.Errorf("an EDS cluster starts without hosts: %v", eds[0].Hosts())
	}

	warmed := m.Warmed()
	select {
	case <-warmed:
		t.Fatal("warm before any load assignment")
	case <-time.After(20 * time.Millisecond):
	}

	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "backend-svc", Endpoints: []*endpointv3.LocalityLbEndpoints{{
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
			}}},
		}}}},
	}}}
	priorities, err := eds[0].EDSHosts(cla)
	if err != nil {
		t.Fatal(err)
	}
	if len(eds[0].Hosts()) != 0 {
		t.Error("EDSHosts changed the hosts")
	}
	eds[0].SetEDSHosts(priorities)
	if hs := eds[0].Hosts(); len(hs) != 1 || hs[0].Address != "127.0.0.1:8080" {
		t.Fatalf("hosts %v", hs)
	}
	if !eds[1].EndWarming() || eds[1].EndWarming() {
		t.Error("EndWarming reports the end of warming once")
	}
	select {
	case <-warmed:
	case <-time.After(5 * time.Second):
		t.Fatal("not warm once every EDS cluster is")
	}

	// Problems are reported with their paths.
	cla.Policy = &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(0)}
	cla.Endpoints[0].Priority = 500
	_, err = eds[0].EDSHosts(cla)
	if err == nil || !strings.Contains(err.Error(), "policy.overprovisioning_factor: must be above 0") || !strings.Contains(err.Error(), "endpoints[0].priority: 500 is above the lowest priority 128") {
		t.Errorf("EDSHosts error = %v", err)
	}
	if _, err := m.Cluster("static").EDSHosts(cla); err == nil {
		t.Error("EDSHosts of a STATIC cluster succeeded")
	}
}

// TestEDSPolicy checks that each load assignment sets the balancer's
// overprovisioning factor and weighted priority health, and that one
// without them goes back to Envoy's defaults.
func TestEDSPolicy(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	// P0: a healthy host of weight 3 and an unhealthy one of weight 1;
	// P1: one healthy host.
	ep := func(port uint32, w uint32, health corev3.HealthStatus, priority uint32) *endpointv3.LocalityLbEndpoints {
		return &endpointv3.LocalityLbEndpoints{Priority: priority, LbEndpoints: []*endpointv3.LbEndpoint{{
			HealthStatus:        health,
			LoadBalancingWeight: wrapperspb.UInt32(w),
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
				}}},
			}},
		}}}
	}
	assign := func(policy *endpointv3.ClusterLoadAssignment_Policy) []uint32 {
		t.Helper()
		cla := &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Policy: policy, Endpoints: []*endpointv3.LocalityLbEndpoints{
			ep(8080, 3, corev3.HealthStatus_HEALTHY, 0), ep(8081, 1, corev3.HealthStatus_UNHEALTHY, 0), ep(8082, 1, corev3.HealthStatus_HEALTHY, 1),
		}}
		hs, err := c.EDSHosts(cla)
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(hs)
		healthy, _, _ := c.balancer.Load().Loads()
		return healthy
	}
	steps := []struct {
		name   string
		policy *endpointv3.ClusterLoadAssignment_Policy
		want   []uint32
	}{
		// 140 * 1/2 = 70.
		{"default factor", nil, []uint32{70, 30}},
		// 200 * 1/2 = 100.
		{"factor 200", &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(200)}, []uint32{100, 0}},
		// 100 * 1/2 = 50.
		{"factor 100", &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(100)}, []uint32{50, 50}},
		// 100 * 3/4 = 75.
		{"factor 100 by weight", &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(100), WeightedPriorityHealth: true}, []uint32{75, 25}},
		// An update without a policy: default factor, by count.
		{"back to the defaults", nil, []uint32{70, 30}},
	}
	for _, st := range steps {
		if got := assign(st.policy); !slices.Equal(got, st.want) {
			t.Errorf("%s: healthy loads %v, want %v", st.name, got, st.want)
		}
	}
	if set := c.set.Load(); set.policy.factor != lb.DefaultOverprovisioningFactor || set.policy.weighted {
		t.Errorf("host set policy %+v after an assignment without one", set.policy)
	}

	// A stale assignment (endpoint_stale_after): no host, the default
	// policy, the drop ratio kept.
	assign(&endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(200), WeightedPriorityHealth: true})
	c.drop.Store(1000)
	c.DropEDSHosts()
	if hs := c.Hosts(); len(hs) != 0 {
		t.Errorf("hosts after DropEDSHosts: %v", hs)
	}
	if set := c.set.Load(); set.policy.factor != lb.DefaultOverprovisioningFactor || set.policy.weighted {
		t.Errorf("host set policy %+v after DropEDSHosts", set.policy)
	}
	if c.drop.Load() != 1000 {
		t.Errorf("drop ratio %d after DropEDSHosts, want it kept", c.drop.Load())
	}
}

// TestStaticWeightedPriorityHealth checks a static cluster's
// load_assignment.policy.weighted_priority_health and overprovisioning
// factor reach its balancer.
func TestStaticWeightedPriorityHealth(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: counted
  load_assignment:
    cluster_name: counted
    policy: {overprovisioning_factor: 100}
    endpoints:
    - lb_endpoints:
      - {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}, load_balancing_weight: 3}
      - {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 81}}}, load_balancing_weight: 1, health_status: UNHEALTHY}
    - priority: 1
      lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 82}}}}]
- name: weighted
  load_assignment:
    cluster_name: weighted
    policy: {overprovisioning_factor: 100, weighted_priority_health: true}
    endpoints:
    - lb_endpoints:
      - {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}, load_balancing_weight: 3}
      - {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 81}}}, load_balancing_weight: 1, health_status: UNHEALTHY}
    - priority: 1
      lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 82}}}}]`)
	for name, want := range map[string][]uint32{"counted": {50, 50}, "weighted": {75, 25}} {
		if got, _, _ := m.Cluster(name).balancer.Load().Loads(); !slices.Equal(got, want) {
			t.Errorf("%s: healthy loads %v, want %v", name, got, want)
		}
	}
}
