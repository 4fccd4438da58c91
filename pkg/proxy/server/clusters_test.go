package server

import (
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// endpoint is one lb_endpoints entry.
func endpoint(ip string, port uint32, mutate func(*endpointv3.LbEndpoint)) *endpointv3.LbEndpoint {
	e := &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: addr(ip, port),
	}}}
	if mutate != nil {
		mutate(e)
	}
	return e
}

func addr(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// testClusterManager builds "web" (a canary host in zone a, a DRAINING
// IPv6 host in priority 1) and "empty" (high-priority thresholds set).
func testClusterManager(t *testing.T) *cluster.Manager {
	t.Helper()
	canary, err := structpb.NewStruct(map[string]any{"canary": true})
	if err != nil {
		t.Fatal(err)
	}
	cfgs := []*clusterv3.Cluster{
		{
			Name:        "web",
			AltStatName: "web_stats",
			LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: "web", Endpoints: []*endpointv3.LocalityLbEndpoints{
				{
					Locality: &corev3.Locality{Region: "r", Zone: "a", SubZone: "s"},
					LbEndpoints: []*endpointv3.LbEndpoint{endpoint("127.0.0.1", 8080, func(e *endpointv3.LbEndpoint) {
						e.GetEndpoint().Hostname = "a.local"
						e.LoadBalancingWeight = wrapperspb.UInt32(3)
						e.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": canary}}
					})},
				},
				{
					Priority: 1,
					LbEndpoints: []*endpointv3.LbEndpoint{endpoint("::1", 8443, func(e *endpointv3.LbEndpoint) {
						e.HealthStatus = corev3.HealthStatus_DRAINING
					})},
				},
			}},
		},
		{
			Name: "empty",
			CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
				{Priority: corev3.RoutingPriority_HIGH, MaxConnections: wrapperspb.UInt32(5)},
			}},
		},
	}
	m, err := cluster.NewManager(cfgs, cluster.Options{Stats: stats.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func thresholdsOf(p corev3.RoutingPriority, maxConnections uint32) *clusterv3.CircuitBreakers_Thresholds {
	return &clusterv3.CircuitBreakers_Thresholds{
		Priority:           p,
		MaxConnections:     wrapperspb.UInt32(maxConnections),
		MaxPendingRequests: wrapperspb.UInt32(1024),
		MaxRequests:        wrapperspb.UInt32(1024),
		MaxRetries:         wrapperspb.UInt32(3),
	}
}

func hostMetrics(cxTotal uint64, rqActive uint64) []*adminv3.SimpleMetric {
	c := func(n string, v uint64) *adminv3.SimpleMetric { return &adminv3.SimpleMetric{Name: n, Value: v} }
	g := func(n string, v uint64) *adminv3.SimpleMetric {
		return &adminv3.SimpleMetric{Type: adminv3.SimpleMetric_GAUGE, Name: n, Value: v}
	}
	return []*adminv3.SimpleMetric{
		c("cx_connect_fail", 0), c("cx_total", cxTotal), c("rq_error", 0), c("rq_success", 0),
		c("rq_timeout", 0), c("rq_total", 0), g("cx_active", 0), g("rq_active", rqActive),
	}
}

func TestServerClusters(t *testing.T) {
	m := testClusterManager(t)
	web := m.Cluster("web")
	web.Hosts()[0].Stats.CxTotal.Add(4)
	web.Hosts()[0].Stats.RqActive.Add(2)
	s := &Server{clusters: m}

	want := &adminv3.Clusters{ClusterStatuses: []*adminv3.ClusterStatus{
		{
			Name:              "web",
			ObservabilityName: "web_stats",
			CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
				thresholdsOf(corev3.RoutingPriority_DEFAULT, 1024), thresholdsOf(corev3.RoutingPriority_HIGH, 1024),
			}},
			HostStatuses: []*adminv3.HostStatus{
				{
					Address:      addr("127.0.0.1", 8080),
					Stats:        hostMetrics(4, 2),
					HealthStatus: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_HEALTHY},
					Weight:       3,
					Hostname:     "a.local",
					Locality:     &corev3.Locality{Region: "r", Zone: "a", SubZone: "s"},
				},
				{
					Address:      addr("::1", 8443),
					Stats:        hostMetrics(0, 0),
					HealthStatus: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_UNHEALTHY},
					Weight:       1,
					Priority:     1,
					Locality:     &corev3.Locality{},
				},
			},
		},
		{
			Name:              "empty",
			ObservabilityName: "empty",
			CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
				thresholdsOf(corev3.RoutingPriority_DEFAULT, 1024), thresholdsOf(corev3.RoutingPriority_HIGH, 5),
			}},
		},
	}}
	if diff := cmp.Diff(want, s.Clusters(), protocmp.Transform()); diff != "" {
		t.Errorf("Clusters() (-want +got):\n%s", diff)
	}

	canaries := map[string]struct {
		cluster string
		addr    *corev3.Address
		want    bool
	}{
		"canary host":     {"web", addr("127.0.0.1", 8080), true},
		"other host":      {"web", addr("::1", 8443), false},
		"unknown cluster": {"nope", addr("127.0.0.1", 8080), false},
		"not an IP":       {"web", addr("localhost", 8080), false},
		"no address":      {"web", nil, false},
	}
	for name, tc := range canaries {
		if got := s.IsCanary(tc.cluster, tc.addr); got != tc.want {
			t.Errorf("%s: IsCanary = %v, want %v", name, got, tc.want)
		}
	}
}

func TestServerClustersWithoutManager(t *testing.T) {
	s := &Server{}
	if diff := cmp.Diff(&adminv3.Clusters{}, s.Clusters(), protocmp.Transform()); diff != "" {
		t.Errorf("Clusters() (-want +got):\n%s", diff)
	}
	if s.IsCanary("web", addr("127.0.0.1", 1)) {
		t.Error("IsCanary without clusters")
	}
	if s.upstreams().Cluster("web") != nil {
		t.Error("a cluster was found without a manager")
	}
}

func TestUpstreams(t *testing.T) {
	s := &Server{clusters: testClusterManager(t)}
	u := s.upstreams()
	if c := u.Cluster("web"); c == nil || c.Name() != "web" {
		t.Errorf("Cluster(web) = %v", c)
	}
	// A missing cluster is a nil interface, not a nil pointer in one.
	if c := u.Cluster("missing"); c != nil {
		t.Errorf("Cluster(missing) = %#v, want nil", c)
	}
}
