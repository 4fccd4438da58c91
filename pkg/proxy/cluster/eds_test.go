package cluster

import (
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
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

	// Problems are reported with their paths, and a policy is refused.
	cla.Policy = &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(200)}
	cla.Endpoints[0].Priority = 500
	_, err = eds[0].EDSHosts(cla)
	if err == nil || !strings.Contains(err.Error(), "policy: only drop_overloads is supported") || !strings.Contains(err.Error(), "endpoints[0].priority: 500 is above the lowest priority 128") {
		t.Errorf("EDSHosts error = %v", err)
	}
	if _, err := m.Cluster("static").EDSHosts(cla); err == nil {
		t.Error("EDSHosts of a STATIC cluster succeeded")
	}
}
