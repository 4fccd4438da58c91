package cluster

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// claOf is a load assignment of loopback ports.
func claOf(ports ...uint32) *endpointv3.ClusterLoadAssignment {
	var eps []*endpointv3.LbEndpoint
	for _, p := range ports {
		eps = append(eps, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: p},
			}}},
		}}})
	}
	return &endpointv3.ClusterLoadAssignment{Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: eps}}}
}

// TestOutlierAcrossEDSUpdates: every host has its monitor once
// published; an ejected host stays ejected, out of the load balancer,
// when a new load assignment keeps its endpoint (the same host) or only
// its address (a new host object), and
// the ejection count follows hosts that leave.
func TestOutlierAcrossEDSUpdates(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: backend
  type: EDS
  outlier_detection: {consecutive_5xx: 1, max_ejection_percent: 50}`)
	c := m.Cluster("backend")
	apply := func(ports ...uint32) {
		t.Helper()
		p, err := c.EDSHosts(claOf(ports...))
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(p)
	}
	apply(8080, 8081)
	for _, h := range c.Hosts() {
		if h.Outlier() == nil {
			t.Fatalf("host %s has no monitor", h.Address)
		}
	}
	first := c.Hosts()[0]
	first.Outlier().PutHTTPResponseCode(503)
	for range 4 {
		if h := c.PickHost(nil); h == first {
			t.Fatal("the ejected host was picked")
		}
	}
	apply(8080, 8081, 8082)
	if kept := c.Hosts()[0]; kept != first {
		t.Fatalf("the unchanged endpoint at %s did not keep its host", first.Address)
	}
	if !first.HasHealthFlag(upstream.FailedOutlierCheck) || first.Outlier() == nil {
		t.Fatal("the host kept across the update lost its ejection or its monitor")
	}
	// An endpoint changed in a setting (its weight) is a new host at the
	// same address, which takes the ejection and the monitor over.
	changed := claOf(8080, 8081, 8082)
	changed.Endpoints[0].LbEndpoints[0].LoadBalancingWeight = wrapperspb.UInt32(2)
	p, err := c.EDSHosts(changed)
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(p)
	renewed := c.Hosts()[0]
	if renewed == first || renewed.Address != first.Address {
		t.Fatalf("expected a new host object at %s", first.Address)
	}
	if !renewed.HasHealthFlag(upstream.FailedOutlierCheck) || renewed.Outlier() != first.Outlier() {
		t.Fatal("the host renewed by the update lost its ejection or its monitor")
	}
	for range 6 {
		if h := c.PickHost(nil); h.Address == first.Address {
			t.Fatal("the ejected address was picked after the update")
		}
	}
	active := store.Gauge("cluster.backend.outlier_detection.ejections_active")
	if active.Value() != 1 {
		t.Fatalf("ejections_active %d, want 1", active.Value())
	}
	apply(8081, 8082)
	if active.Value() != 0 {
		t.Fatalf("ejections_active %d after the ejected host left, want 0", active.Value())
	}
}

func TestOutlierConfigErrors(t *testing.T) {
	_, err := NewManager(parseClusters(t, `
- name: backend
  outlier_detection: {base_ejection_time: 60s, max_ejection_time: 10s}`), Options{Stats: nil})
	if err == nil || !strings.Contains(err.Error(), "static_resources.clusters[0].outlier_detection.max_ejection_time: 10s is smaller than base_ejection_time (1m0s)") {
		t.Fatalf("error %v", err)
	}
}
