package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
)

// netTimeout bounds every network wait of these tests.
const netTimeout = 5 * time.Second

// buildListenerServer builds a server from a YAML bootstrap and command line
// arguments, as cmd/sidecar does, and returns it with the build error.
func buildListenerServer(t *testing.T, yaml string, args ...string) (*Server, error) {
	t.Helper()
	return buildListenerServerWith(t, builtin.Registry(), yaml, args...)
}

// buildListenerServerWith is buildListenerServer with the extensions ext.
func buildListenerServerWith(t *testing.T, ext *extension.Registry, yaml string, args ...string) (*Server, error) {
	t.Helper()
	opts, err := options.Parse(append([]string{"--config-yaml", yaml}, args...), options.Environment{HardwareThreads: 2})
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	logs, err := logging.New(logging.Config{Level: logging.LevelOff, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := bootstrap.Load(bootstrap.LoadOptions{ConfigYAML: yaml})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := bootstrap.Validate(loaded.Bootstrap, ext); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return New(Config{Options: opts, Bootstrap: loaded.Bootstrap, Extensions: ext, Logs: logs})
}

// startListenerServer builds a server and starts its listeners (not its admin)
// until the test ends.
func startListenerServer(t *testing.T, yaml string, args ...string) *Server {
	t.Helper()
	return startListenerServerWith(t, builtin.Registry(), yaml, args...)
}

// startListenerServerWith is startListenerServer with the extensions ext.
func startListenerServerWith(t *testing.T, ext *extension.Registry, yaml string, args ...string) *Server {
	t.Helper()
	s, err := buildListenerServerWith(t, ext, yaml, args...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.startListeners(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.closeListeners)
	return s
}

// hcmListener is a listener answering every path with 200 and body,
// bound to 127.0.0.1 on port 0; extra is added to the listener.
func hcmListener(name, body, extra string) string {
	return fmt.Sprintf(`
  - name: %s
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    %s
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: %s
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                direct_response: {status: 200, body: {inline_string: %s}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}`,
		name, extra, name, body)
}

// withListeners is a bootstrap with the given listeners.
func withListeners(listeners ...string) string {
	return "static_resources:\n  listeners:" + strings.Join(listeners, "")
}

// fetch GETs path from a listener of s with a fresh connection.
func fetch(t *testing.T, addr, path string) (int, string, error) {
	t.Helper()
	client := &http.Client{Timeout: netTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// listenerAddr returns the bound address of the named listener.
func listenerAddr(t *testing.T, s *Server, name string) string {
	t.Helper()
	for _, bl := range s.activeListeners() {
		if bl.Name() == name {
			return bl.Addr().String()
		}
	}
	t.Fatalf("no listener %q", name)
	return ""
}

func TestListenersServeAndReport(t *testing.T) {
	s := startListenerServer(t, withListeners(
		hcmListener("ingress", "in", "traffic_direction: INBOUND"),
		hcmListener("egress", "out", "additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: 0}}}]"),
	), "--concurrency", "2")
	for name, body := range map[string]string{"ingress": "in", "egress": "out"} {
		code, got, err := fetch(t, listenerAddr(t, s, name), "/")
		if err != nil || code != http.StatusOK || got != body {
			t.Errorf("%s answered %d %q %v, want 200 %q", name, code, got, err, body)
		}
	}

	ls := s.Listeners().GetListenerStatuses()
	if len(ls) != 2 || ls[0].GetName() != "ingress" || ls[1].GetName() != "egress" {
		t.Fatalf("Listeners() = %v", ls)
	}
	for _, st := range ls {
		for _, a := range append(st.GetAdditionalLocalAddresses(), st.GetLocalAddress()) {
			if sa := a.GetSocketAddress(); sa.GetAddress() != "127.0.0.1" || sa.GetPortValue() == 0 {
				t.Errorf("%s listens on %v, want 127.0.0.1 with its bound port", st.GetName(), sa)
			}
		}
	}
	if n := len(ls[1].GetAdditionalLocalAddresses()); n != 1 {
		t.Errorf("egress has %d additional addresses, want 1", n)
	}

	want := map[string]uint64{
		"listener_manager.listener_added":          2,
		"listener_manager.listener_create_success": 4, // two listeners, two workers
	}
	for name, v := range want {
		if got := s.stats.Counter(name).Value(); got != v {
			t.Errorf("%s = %d, want %d", name, got, v)
		}
	}
	if got := s.stats.Gauge("listener_manager.workers_started").Value(); got != 1 {
		t.Errorf("listener_manager.workers_started = %d, want 1", got)
	}
}

func TestActiveConnectionsFeedTotal(t *testing.T) {
	s := startListenerServer(t, withListeners(hcmListener("l", "x", "")))
	c, err := net.DialTimeout("tcp", listenerAddr(t, s, "l"), netTimeout)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the connection to be counted", func() bool { return s.activeConnections() == 1 })
	c.Close()
	waitUntil(t, "the connection's end to be counted", func() bool { return s.activeConnections() == 0 })
}

func TestBuildListenerErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"duplicate additional address": {
			yaml: strings.Replace(withListeners(
				hcmListener("a", "a", ""),
				hcmListener("b", "b", "additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: 10998}}}, {address: {socket_address: {address: 127.0.0.1, port_value: 10999}}}]")),
				"port_value: 0", "port_value: 10999", 1),
			want: []string{"static_resources.listeners[1].additional_addresses[1].address: address 127.0.0.1:10999 is already used by static_resources.listeners[0].address"},
		},
		"no filters": {
			yaml: "static_resources:\n  listeners:\n  - {name: x, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, filter_chains: [{}]}",
			want: []string{"static_resources.listeners[0].filter_chains[0].filters: a filter chain needs at least one network filter, ending with a terminal filter (http_connection_manager or tcp_proxy)"},
		},
		"every listener reported": {
			yaml: withListeners(
				"\n  - {name: a, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, default_filter_chain: {filter_chain_match: {destination_port: 1}}}",
				strings.Replace(hcmListener("b", "b", ""), "127.0.0.1", "localhost", 1)),
			want: []string{
				"static_resources.listeners[0].default_filter_chain.filter_chain_match: the default filter chain serves connections no other chain matches; it takes no filter_chain_match",
				"static_resources.listeners[0].default_filter_chain.filters: a filter chain needs at least one network filter, ending with a terminal filter (http_connection_manager or tcp_proxy)",
				`static_resources.listeners[1].address.socket_address.address: "localhost" is not an IP address (listeners bind IP addresses, not names)`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := buildListenerServer(t, tc.yaml)
			if err == nil {
				t.Fatal("New succeeded")
			}
			var got []string
			for _, e := range listener.PrefixErrors("", err) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestUnnamedListenerGetsAUUID(t *testing.T) {
	s, err := buildListenerServer(t, withListeners(strings.Replace(hcmListener("x", "x", ""), "- name: x", `- name: ""`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	name := s.Listeners().GetListenerStatuses()[0].GetName()
	if len(name) != 36 || strings.Count(name, "-") != 4 || name[14] != '4' {
		t.Errorf("unnamed listener is named %q, want a version 4 UUID", name)
	}
}

func TestListenerAccessLogsShareAndReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	s, err := buildListenerServer(t, withListeners(hcmListener("l", "x", "")), "--file-flush-interval-msec", "0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, fw := range s.accessLogs {
			_ = fw.Close()
		}
	})
	w1, err := s.openAccessLog(accesslog.File, path)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := s.openAccessLog(accesslog.File, path)
	if err != nil {
		t.Fatal(err)
	}
	if w1 != w2 || len(s.accessLogs) != 1 {
		t.Fatalf("two loggers of one file got %d writers", len(s.accessLogs))
	}
	// The admin's access log on that file shares the writer too.
	//lint:ignore SA1019 the spec names admin.access_log_path
	s.boot.Admin = &bootstrapv3.Admin{AccessLogPath: path}
	if l, err := s.buildAdminAccessLog(); err != nil || l == nil || len(s.accessLogs) != 1 {
		t.Fatalf("the admin access log on the listeners' file: %v, %d writers", err, len(s.accessLogs))
	}
	if _, err := io.WriteString(w1, "before\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReopenLogs(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w1, "after\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.accessLogs[0].Flush(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "after\n" {
		t.Errorf("reopened log holds %q, want the line written after /reopen_logs", got)
	}
	if _, err := s.openAccessLog(accesslog.File, filepath.Join(dir, "missing", "x.log")); err == nil {
		t.Error("opening a log in a missing directory succeeded")
	}
}

// waitUntil polls cond (bounded by netTimeout) for an effect that happens on
// another goroutine.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(netTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
