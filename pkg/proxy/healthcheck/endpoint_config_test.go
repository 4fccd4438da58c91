package healthcheck

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestEndpointHealthCheckConfig checks an endpoint's health_check_config:
// port_value sends the checks to another port of the host, address to
// another address, hostname is the checks' Host (before the check's own
// host), and disable_active_health_check leaves the host unchecked and
// healthy while its neighbours are checked.
func TestEndpointHealthCheckConfig(t *testing.T) {
	var mu sync.Mutex
	hostSeen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hostSeen[r.Host] = true
		mu.Unlock()
	}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))

	cfg := compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
		hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/", Host: "configured.example"}}
	}), false)
	c := New(cfg, Env{Cluster: "svc", Scope: stats.NewStore().Scope("cluster.svc."), Dial: plainDial})
	// Nothing listens on port 1 of the hosts' addresses: only their
	// health_check_config leads the checks to the server.
	byPort := &upstream.Host{Address: "127.0.0.1:1", HealthCheck: &upstream.HostHealthCheck{Port: ap.Port(), Hostname: "by-port.example"}}
	byAddress := &upstream.Host{Address: "127.0.0.3:1", HealthCheck: &upstream.HostHealthCheck{IP: ap.Addr(), Port: ap.Port()}}
	disabled := &upstream.Host{Address: "127.0.0.4:1", HealthCheck: &upstream.HostHealthCheck{Disabled: true}}
	plain := &upstream.Host{Address: "127.0.0.5:1"}
	c.Sync([]*upstream.Host{byPort, byAddress, disabled, plain})
	c.Start()
	defer c.Stop()
	select {
	case <-c.FirstChecks():
	case <-time.After(5 * time.Second):
		t.Fatal("first checks never ended")
	}
	if !byPort.Healthy() || !byAddress.Healthy() {
		t.Errorf("hosts checked at their health_check_config's port and address: healthy %v %v, want both", byPort.Healthy(), byAddress.Healthy())
	}
	if !disabled.Healthy() {
		t.Error("a host with disable_active_health_check was failed")
	}
	if plain.Healthy() {
		t.Error("a host without health_check_config (nothing listening) is healthy")
	}
	mu.Lock()
	defer mu.Unlock()
	if !hostSeen["by-port.example"] || !hostSeen["configured.example"] || len(hostSeen) != 2 {
		t.Errorf("Host headers seen %v, want the endpoint's hostname and the check's host", hostSeen)
	}
	c.mu.Lock()
	_, checked := c.sessions[disabled.Address]
	c.mu.Unlock()
	if checked {
		t.Error("a session runs for the host with disable_active_health_check")
	}
}

// TestEndpointHealthCheckConfigChange checks that a host whose
// health_check_config changes (same address) is checked the new way.
func TestEndpointHealthCheckConfigChange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))
	cfg := compiled(t, healthCheck(func(hc *corev3.HealthCheck) {
		hc.Interval = durationpb.New(20 * time.Millisecond)
		hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/"}}
	}), false)
	c := New(cfg, Env{Cluster: "svc", Scope: stats.NewStore().Scope("cluster.svc."), Dial: plainDial})
	before := &upstream.Host{Address: "127.0.0.1:1"}
	c.Sync([]*upstream.Host{before})
	c.Start()
	defer c.Stop()
	<-c.FirstChecks()
	if before.Healthy() {
		t.Fatal("nothing listens at the host's address, yet it is healthy")
	}
	after := &upstream.Host{Address: "127.0.0.1:1", HealthCheck: &upstream.HostHealthCheck{Port: ap.Port()}}
	c.Sync([]*upstream.Host{after})
	deadline := time.Now().Add(5 * time.Second)
	for !after.Healthy() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !after.Healthy() {
		t.Error("the host's new port_value was never checked")
	}
}
