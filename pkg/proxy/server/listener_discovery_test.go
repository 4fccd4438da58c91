package server

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// ldsBootstrap is a bootstrap with the given static listeners (none when
// empty) and listener discovery from an empty file in a temporary folder.
func ldsBootstrap(t *testing.T, static ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lds.yaml")
	if err := os.WriteFile(path, []byte("version_info: \"0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := "dynamic_resources:\n  lds_config:\n    path_config_source: {path: " + path + "}\n"
	if len(static) > 0 {
		b += withListeners(static...)
	}
	return b
}

// parseListeners reads listeners written like hcmListener's output (a YAML
// list).
func parseListeners(t *testing.T, items ...string) []proto.Message {
	t.Helper()
	var out []proto.Message
	for _, item := range items {
		js, err := yaml.YAMLToJSON([]byte(strings.Replace(strings.TrimLeft(item, "\n"), "  - ", "    ", 1)))
		if err != nil {
			t.Fatalf("listener YAML: %v", err)
		}
		lc := &listenerv3.Listener{}
		if err := protojson.Unmarshal(js, lc); err != nil {
			t.Fatalf("listener JSON: %v\n%s", err, js)
		}
		out = append(out, lc)
	}
	return out
}

// activeNames lists the names of the listeners in service.
func activeNames(s *Server) []string {
	var names []string
	for _, bl := range s.activeListeners() {
		names = append(names, bl.Name())
	}
	return names
}

// managerStat reads a listener_manager counter or gauge.
func managerStat(s *Server, name string) int64 {
	if strings.HasPrefix(name, "total_") {
		return s.stats.Gauge("listener_manager." + name).Value()
	}
	return int64(s.stats.Counter("listener_manager." + name).Value())
}

func TestListenerDiscoveryAddUpdateRemove(t *testing.T) {
	s := startListenerServer(t, ldsBootstrap(t), "--drain-strategy", "immediate", "--drain-time-s", "30")

	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: parseListeners(t, hcmListener("dyn", "one", ""))}); err != nil {
		t.Fatal(err)
	}
	addr := listenerAddr(t, s, "dyn")
	if code, body, err := fetch(t, addr, "/"); err != nil || code != http.StatusOK || body != "one" {
		t.Fatalf("after the add: %d %q %v", code, body, err)
	}
	client := &http.Client{Timeout: netTimeout}
	defer client.CloseIdleConnections()
	if code, body, err := fetchWith(client, addr); err != nil || code != http.StatusOK || body != "one" {
		t.Fatalf("keep-alive before the update: %d %q %v", code, body, err)
	}

	// The same update again changes nothing.
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "1b", Resources: parseListeners(t, hcmListener("dyn", "one", ""))}); err != nil {
		t.Fatal(err)
	}
	if got := managerStat(s, "listener_modified"); got != 0 {
		t.Errorf("an unchanged listener was modified (%d)", got)
	}

	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "2", Resources: parseListeners(t, hcmListener("dyn", "two", ""))}); err != nil {
		t.Fatal(err)
	}
	if got := listenerAddr(t, s, "dyn"); got != addr {
		t.Errorf("the updated listener moved from %s to %s", addr, got)
	}
	if code, body, err := fetch(t, addr, "/"); err != nil || code != http.StatusOK || body != "two" {
		t.Errorf("a new connection after the update: %d %q %v", code, body, err)
	}
	// The connection accepted before the update stays with the old
	// configuration, which drains it (immediately: its answer closes it).
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if body := string(b); body != "one" || !resp.Close {
		t.Errorf("the old keep-alive connection answered %q (close %v), want one with Connection: close", b, resp.Close)
	}
	for name, want := range map[string]int64{"listener_added": 1, "listener_modified": 1, "listener_removed": 0, "total_listeners_active": 1, "total_listeners_draining": 1} {
		if got := managerStat(s, name); got != want {
			t.Errorf("listener_manager.%s = %d, want %d", name, got, want)
		}
	}

	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "3"}); err != nil {
		t.Fatal(err)
	}
	if names := activeNames(s); len(names) != 0 {
		t.Errorf("listeners after the removal: %v", names)
	}
	if !refuses(addr) {
		t.Error("a removed listener still accepts")
	}
	for name, want := range map[string]int64{"listener_removed": 1, "total_listeners_active": 0, "total_listeners_draining": 2} {
		if got := managerStat(s, name); got != want {
			t.Errorf("listener_manager.%s = %d, want %d", name, got, want)
		}
	}

	dump, _ := s.listenersDump(nil, nil)
	if dump.GetVersionInfo() != "3" || len(dump.GetDynamicListeners()) != 1 {
		t.Fatalf("listeners dump: %v", dump)
	}
	if d := dump.GetDynamicListeners()[0]; d.GetActiveState() != nil || d.GetDrainingState().GetVersionInfo() == "" {
		t.Errorf("a removed listener's dump entry should be draining only: %v", d)
	}
}

func TestListenerDiscoveryRefusedAfterDrain(t *testing.T) {
	s := startListenerServer(t, ldsBootstrap(t,
		hcmListener("ingress", "in", "traffic_direction: INBOUND"),
		hcmListener("egress", "out", "traffic_direction: OUTBOUND"),
	))
	if err := s.DrainListeners(true, false, false); err != nil {
		t.Fatal(err)
	}
	update := parseListeners(t,
		hcmListener("dyn-in", "in2", "traffic_direction: INBOUND"),
		hcmListener("dyn-out", "out2", "traffic_direction: OUTBOUND"),
	)
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: update}); err != nil {
		t.Fatalf("a refused listener is skipped, not an error: %v", err)
	}
	if got, want := activeNames(s), []string{"ingress", "egress", "dyn-out"}; !slices.Equal(got, want) {
		t.Fatalf("after an inboundonly drain: listeners %v, want %v", got, want)
	}
	if code, body, err := fetch(t, listenerAddr(t, s, "dyn-out"), "/"); err != nil || code != http.StatusOK || body != "out2" {
		t.Errorf("the outbound listener added after the drain: %d %q %v", code, body, err)
	}

	// Once every listener is stopped, an update cannot change one either.
	if err := s.DrainListeners(false, false, false); err != nil {
		t.Fatal(err)
	}
	addr := listenerAddr(t, s, "dyn-out")
	update = parseListeners(t,
		hcmListener("dyn-out", "changed", "traffic_direction: OUTBOUND"),
		hcmListener("dyn-new", "new", "traffic_direction: OUTBOUND"),
	)
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "2", Resources: update}); err != nil {
		t.Fatal(err)
	}
	if got, want := activeNames(s), []string{"ingress", "egress", "dyn-out"}; !slices.Equal(got, want) {
		t.Errorf("after a full drain: listeners %v, want %v", got, want)
	}
	if !refuses(addr) {
		t.Error("a drained listener accepts again after a refused update")
	}
	// Removing still works.
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "3"}); err != nil {
		t.Fatal(err)
	}
	if got, want := activeNames(s), []string{"ingress", "egress"}; !slices.Equal(got, want) {
		t.Errorf("after removing every discovered listener: %v, want %v", got, want)
	}
}

func TestListenerDiscoveryFailures(t *testing.T) {
	s := startListenerServer(t, ldsBootstrap(t, hcmListener("static", "s", "")))
	staticAddr := listenerAddr(t, s, "static")
	_, port, _ := net.SplitHostPort(staticAddr)
	clash := strings.Replace(hcmListener("clash", "c", ""), "port_value: 0", "port_value: "+port, 1)

	t.Run("duplicate names refuse the whole update", func(t *testing.T) {
		err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: parseListeners(t, hcmListener("twice", "a", ""), hcmListener("twice", "b", ""))})
		if err == nil || err.Error() != "duplicate listener twice found" {
			t.Errorf("error = %v", err)
		}
		if got := activeNames(s); !slices.Equal(got, []string{"static"}) {
			t.Errorf("listeners: %v", got)
		}
	})
	t.Run("a failing listener leaves the others applied", func(t *testing.T) {
		err := s.applyListenerUpdate(xds.Update{VersionInfo: "2", Resources: parseListeners(t, clash, hcmListener("good", "g", ""))})
		want := "error adding/updating listener(s) clash: error adding listener: 'clash' has duplicate address '" + staticAddr + "' as existing listener 'static'"
		if err == nil || err.Error() != want {
			t.Errorf("error = %v\nwant    %s", err, want)
		}
		if got := activeNames(s); !slices.Equal(got, []string{"static", "good"}) {
			t.Errorf("listeners: %v", got)
		}
		dump, _ := s.listenersDump(nil, nil)
		var failed *adminv3.ListenersConfigDump_DynamicListener
		for _, d := range dump.GetDynamicListeners() {
			if d.GetName() == "clash" {
				failed = d
			}
		}
		if failed == nil || !strings.Contains(failed.GetErrorState().GetDetails(), "duplicate address") || failed.GetActiveState() != nil {
			t.Errorf("dump entry of the failed listener: %v", failed)
		}
	})
	t.Run("an invalid listener is refused with its field path", func(t *testing.T) {
		bad := hcmListener("bad", "b", "max_connections_to_accept_per_socket_event: 1")
		err := s.applyListenerUpdate(xds.Update{VersionInfo: "3", Resources: parseListeners(t, hcmListener("good", "g", ""), bad)})
		if err == nil || !strings.Contains(err.Error(), "bad: max_connections_to_accept_per_socket_event: not supported by Outrigger") {
			t.Errorf("error = %v", err)
		}
		// The failure of version 2 is forgotten: only the last update's show.
		dump, _ := s.listenersDump(nil, nil)
		for _, d := range dump.GetDynamicListeners() {
			if d.GetName() == "clash" && d.GetErrorState() != nil {
				t.Error("an older update's failure is still shown")
			}
		}
	})
	t.Run("a static listener is not changed", func(t *testing.T) {
		if err := s.applyListenerUpdate(xds.Update{VersionInfo: "4", Resources: parseListeners(t, hcmListener("static", "changed", ""))}); err != nil {
			t.Fatal(err)
		}
		if code, body, err := fetch(t, staticAddr, "/"); err != nil || code != http.StatusOK || body != "s" {
			t.Errorf("the static listener answered %d %q %v", code, body, err)
		}
	})
}
