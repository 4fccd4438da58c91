package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestCloseConnectionsOnHostHealthFailure opens connections of every kind
// to a host (a TCP proxy's, an idle HTTP/1.1 one, one lent to a request),
// then fails the host's health check. As in Envoy, the HTTP/1.1 ones
// drain either way (the idle one closes, the lent one closes when
// released); with close_connections_on_host_health_failure the TCP
// proxy's closes at once, without it it stays.
func TestCloseConnectionsOnHostHealthFailure(t *testing.T) {
	for _, close := range []bool{true, false} {
		t.Run(map[bool]string{true: "close", false: "keep"}[close], func(t *testing.T) {
			addr, setStatus := flakyUpstream(t)
			_, port, _ := net.SplitHostPort(addr)
			flag := "false"
			if close {
				flag = "true"
			}
			m, store, _ := newTestManager(t, `
- name: web
  close_connections_on_host_health_failure: `+flag+`
  load_assignment: {cluster_name: web, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: `+port+`}}}}]}]}
  health_checks: [{timeout: 1s, interval: 0.05s, no_traffic_interval: 0.05s, unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: {path: /healthz}}]`)
			c := m.Cluster("web")
			m.Start()
			select {
			case <-m.Warmed():
			case <-time.After(5 * time.Second):
				t.Fatal("never warm")
			}
			h := c.Hosts()[0]
			ctx := context.Background()
			tcp, err := c.ConnectHost(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			defer tcp.Close()
			lent := idleAndLent(t, c, h)
			active := store.Gauge("cluster.web.upstream_cx_active")
			if got := active.Value(); got != 3 {
				t.Fatalf("upstream_cx_active = %d before the failure, want 3", got)
			}

			setStatus(503)
			deadline := time.Now().Add(5 * time.Second)
			for h.Healthy() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if h.Healthy() {
				t.Fatal("the host never failed its check")
			}
			// The idle connection closes either way (the HTTP pool
			// drains); the TCP proxy's only with the option.
			want := int64(2)
			if close {
				want = 1
			}
			for active.Value() != want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := active.Value(); got != want {
				t.Fatalf("upstream_cx_active = %d after the failure, want %d", got, want)
			}
			if close {
				if _, err := tcp.Read(make([]byte, 1)); err == nil {
					t.Error("the TCP proxy's connection still reads")
				}
			}
			// The lent connection serves its request, then closes rather
			// than going back to the pool.
			if _, err := lent.Conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatalf("the lent connection was closed under its request: %v", err)
			}
			c.ReleaseHTTP1(lent, true)
			if got := active.Value(); got != want-1 {
				t.Errorf("upstream_cx_active = %d after the release, want %d", got, want-1)
			}
		})
	}
}

// TestCloseConnectionsOnHostSetChange checks common_lb_config's
// close_connections_on_host_set_change: when a host joins, every host's
// HTTP/1.1 connections drain (the idle one closes, the lent one closes
// when released), as Envoy drains every pool; an update with the same
// hosts does not; without the option nothing drains.
func TestCloseConnectionsOnHostSetChange(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			port := loopbackServer(t, echoConn)
			flag := "false"
			if on {
				flag = "true"
			}
			m, store, _ := newTestManager(t, `
- name: web
  common_lb_config: {close_connections_on_host_set_change: `+flag+`}
  load_assignment: {cluster_name: web, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: `+strconv.Itoa(port)+`}}}}]}]}`)
			c := m.Cluster("web")
			h := c.Hosts()[0]
			lent := idleAndLent(t, c, h)
			active := store.Gauge("cluster.web.upstream_cx_active")
			if got := active.Value(); got != 2 {
				t.Fatalf("upstream_cx_active = %d, want 2", got)
			}
			// The same hosts again: no membership change.
			c.SetHosts([][]*upstream.Host{{h}})
			if got := active.Value(); got != 2 {
				t.Fatalf("after an update without a change upstream_cx_active = %d, want 2", got)
			}
			// A host joins.
			c.SetHosts([][]*upstream.Host{{h, {Address: "127.0.0.1:1", Cluster: "web", Weight: 1}}})
			want := int64(2)
			if on {
				want = 1
			}
			if got := active.Value(); got != want {
				t.Fatalf("after a host joined upstream_cx_active = %d, want %d", got, want)
			}
			c.ReleaseHTTP1(lent, true)
			want = 2
			if on {
				want = 0
			}
			if got := active.Value(); got != want {
				t.Errorf("after the release upstream_cx_active = %d, want %d", got, want)
			}
		})
	}
}

// TestUpdateMergeWindow checks that common_lb_config.update_merge_window
// is accepted at 0s (updates apply at once, as Outrigger's always do) and
// refused otherwise.
func TestUpdateMergeWindow(t *testing.T) {
	src := func(w string) string {
		return "- name: web\n  common_lb_config: {update_merge_window: " + w + "}" + upHosts(1)
	}
	newTestManager(t, src("0s"))
	_, err := NewManager(parseClusters(t, src("1s")), Options{})
	want := []string{"static_resources.clusters[0].common_lb_config.update_merge_window: 1s is not supported by Outrigger (host set updates apply at once, as with 0s)"}
	if err == nil || fmt.Sprint(errorLines(err)) != fmt.Sprint(want) {
		t.Errorf("1s: %v, want %v", err, want)
	}
}
