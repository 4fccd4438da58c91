package cluster

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestHealthCheckConfigErrors(t *testing.T) {
	const tcpCheck = `{timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {}}`
	_, err := NewManager(parseClusters(t, `
- name: two
  load_assignment: {cluster_name: two, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}}]}]}
  health_checks: [`+tcpCheck+`, `+tcpCheck+`]
- name: odst
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  health_checks: [`+tcpCheck+`]
- name: grpc
  load_assignment: {cluster_name: grpc, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 80}}}}]}]}
  health_checks: [{timeout: 1s, interval: 0s, unhealthy_threshold: 1, healthy_threshold: 1, event_log_path: /nonexistent/dir/hc.log, grpc_health_check: {}}]`), Options{Stats: stats.NewStore()})
	want := []string{
		"static_resources.clusters[0].health_checks[1]: Outrigger runs one health checker per cluster; configure one health check",
		"static_resources.clusters[1].health_checks: an ORIGINAL_DST cluster's hosts come and go with connections; active health checks are not supported on it",
		"static_resources.clusters[2].health_checks[0].interval: must be a positive duration",
		"static_resources.clusters[2].health_checks[0].grpc_health_check: grpc cluster must support HTTP/2 for gRPC healthchecking",
		`static_resources.clusters[2].health_checks[0].event_log_path: "/nonexistent/dir/hc.log": its directory does not exist`,
	}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	configErrors(t, err)
}

// flakyUpstream answers /healthz with the status it is set to, other
// paths with 200.
func flakyUpstream(t *testing.T) (addr string, setStatus func(int)) {
	t.Helper()
	status := make(chan int, 1)
	status <- 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := <-status
		status <- s
		if r.URL.Path == "/healthz" {
			w.WriteHeader(s)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func(s int) { <-status; status <- s }
}

func TestHealthChecksGateTrafficAndWarming(t *testing.T) {
	good, _ := flakyUpstream(t)
	bad, setBad := flakyUpstream(t)
	setBad(503)
	port := func(a string) string { _, p, _ := net.SplitHostPort(a); return p }
	m, store, _ := newTestManager(t, `
- name: web
  load_assignment: {cluster_name: web, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: `+port(good)+`}}}},
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: `+port(bad)+`}}}}]}]}
  health_checks: [{timeout: 1s, interval: 0.05s, no_traffic_interval: 0.05s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
	c := m.Cluster("web")
	for _, h := range c.Hosts() {
		if h.Healthy() {
			t.Fatalf("%s is healthy before any check", h.Address)
		}
	}
	m.Start()
	select {
	case <-m.Warmed():
	case <-time.After(5 * time.Second):
		t.Fatal("never warm")
	}
	hosts := c.Hosts()
	if !hosts[0].Healthy() || hosts[1].Healthy() {
		t.Fatalf("after the first round: good healthy=%v, bad healthy=%v", hosts[0].Healthy(), hosts[1].Healthy())
	}
	for i := 0; i < 10; i++ {
		if h := c.PickHost(nil); h != hosts[0] {
			t.Fatalf("pick %d chose %v, want the healthy host", i, h)
		}
	}
	if got := store.Gauge("cluster.web.membership_healthy").Value(); got != 1 {
		t.Errorf("membership_healthy = %d, want 1", got)
	}
	setBad(200)
	deadline := time.Now().Add(5 * time.Second)
	for !hosts[1].Healthy() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !hosts[1].Healthy() {
		t.Fatal("the healed host stayed failed")
	}
	for deadline := time.Now().Add(5 * time.Second); store.Gauge("cluster.web.membership_healthy").Value() != 2; {
		if time.Now().After(deadline) {
			t.Fatal("membership_healthy never reached 2")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if store.Gauge("cluster.web.health_check.healthy").Value() != 2 {
		t.Errorf("health_check.healthy = %d", store.Gauge("cluster.web.health_check.healthy").Value())
	}
}

func TestEDSUpdateKeepsHealth(t *testing.T) {
	good, _ := flakyUpstream(t)
	_, p, _ := net.SplitHostPort(good)
	pn, _ := strconv.Atoi(p)
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS
  health_checks: [{timeout: 1s, interval: 10s, no_traffic_interval: 10s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
	c := m.Cluster("backend")
	m.Start()
	warmed := m.Warmed()
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{{
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(pn)},
			}}},
		}}}},
	}}}
	priorities, err := c.EDSHosts(cla)
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(priorities)
	select {
	case <-warmed:
	case <-time.After(5 * time.Second):
		t.Fatal("never warm")
	}
	first := c.Hosts()[0]
	if !first.Healthy() {
		t.Fatal("host failed its first check")
	}
	// The same assignment keeps the host; one that changes the
	// endpoint's weight builds a new host at the same address, which
	// keeps the health (the next check is 10 s away).
	priorities, _ = c.EDSHosts(cla)
	c.SetEDSHosts(priorities)
	if c.Hosts()[0] != first {
		t.Fatal("the unchanged endpoint did not keep its host")
	}
	cla.Endpoints[0].LbEndpoints[0].LoadBalancingWeight = wrapperspb.UInt32(2)
	priorities, _ = c.EDSHosts(cla)
	c.SetEDSHosts(priorities)
	again := c.Hosts()[0]
	if again == first {
		t.Fatal("the changed endpoint kept its host object")
	}
	if !again.Healthy() || again.HasHealthFlag(upstream.FailedActiveHC) {
		t.Fatalf("kept host lost its health: flags %b", again.HealthFlags())
	}
}

func TestDiscoveredClusterWarmsOnItsFirstChecksAndStopsOnRemoval(t *testing.T) {
	gate := make(chan struct{})
	var checks atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checks.Add(1)
		select {
		case <-gate:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	m, _, clock := newTestManager(t, `[]`)
	cfgs := parseClusters(t, `
- name: hc
  load_assignment: {cluster_name: hc, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: `+p+`}}}}]}]}
  health_checks: [{timeout: 5s, interval: 0.05s, no_traffic_interval: 0.05s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
	if err := m.ApplyDiscovered(cfgs, "v1", clock.now()); err != nil {
		t.Fatal(err)
	}
	// The first check hangs on the gate: the cluster warms meanwhile.
	for deadline := time.Now().Add(5 * time.Second); checks.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no check came")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if m.Cluster("hc") != nil {
		t.Fatal("the cluster serves before its first checks ended")
	}
	close(gate)
	select {
	case <-m.DiscoveredWarmed():
	case <-time.After(5 * time.Second):
		t.Fatal("never warm")
	}
	c := m.Cluster("hc")
	if c == nil || !c.Hosts()[0].Healthy() {
		t.Fatal("the warm cluster is not active with its host healthy")
	}
	// Removed, it checks no more.
	if err := m.ApplyDiscovered(nil, "v2", clock.now()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		before := checks.Load()
		time.Sleep(200 * time.Millisecond)
		if checks.Load() == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("checks go on after the cluster's removal")
		}
	}
}

// edsAssignment is a load assignment of cluster name with one endpoint
// per address ("127.0.0.1:port").
func edsAssignment(t *testing.T, name string, addrs ...string) *endpointv3.ClusterLoadAssignment {
	t.Helper()
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{}}}
	for _, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		pn, _ := strconv.Atoi(p)
		cla.Endpoints[0].LbEndpoints = append(cla.Endpoints[0].LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(pn)},
			}}},
		}}})
	}
	return cla
}

func TestRemovedHostStaysWhileHealthy(t *testing.T) {
	a, _ := flakyUpstream(t)
	b, setB := flakyUpstream(t)
	for _, ignore := range []bool{false, true} {
		m, _, _ := newTestManager(t, `
- name: backend
  type: EDS
  ignore_health_on_host_removal: `+strconv.FormatBool(ignore)+`
  health_checks: [{timeout: 1s, interval: 0.05s, no_traffic_interval: 0.05s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
		c := m.Cluster("backend")
		m.Start()
		set := func(addrs ...string) {
			p, err := c.EDSHosts(edsAssignment(t, "backend", addrs...))
			if err != nil {
				t.Fatal(err)
			}
			c.SetEDSHosts(p)
		}
		set(a, b)
		<-m.Warmed()
		addrs := func() []string {
			var out []string
			for _, h := range c.Hosts() {
				out = append(out, h.Address)
			}
			return out
		}
		set(a)
		if ignore {
			if got := addrs(); !slices.Equal(got, []string{a}) {
				t.Fatalf("ignore_health_on_host_removal: hosts %v, want only %s", got, a)
			}
			continue
		}
		hosts := c.Hosts()
		if len(hosts) != 2 || hosts[1].Address != b || !hosts[1].HasHealthFlag(upstream.PendingDynamicRemoval) || !hosts[1].Healthy() {
			t.Fatalf("the removed healthy host is not kept pending removal: %v", addrs())
		}
		// Back in the assignment, it loses the flag.
		set(a, b)
		if h := c.Hosts()[1]; h.HasHealthFlag(upstream.PendingDynamicRemoval) {
			t.Fatal("a host discovery brought back is still pending removal")
		}
		set(a)
		setB(503)
		deadline := time.Now().Add(5 * time.Second)
		for len(c.Hosts()) != 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := addrs(); !slices.Equal(got, []string{a}) {
			t.Fatalf("after its failure the removed host is still there: %v", got)
		}
		setB(200)
	}
}
