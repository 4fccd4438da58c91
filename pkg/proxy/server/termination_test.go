package server

import (
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// The termination drain starts every listener's drain sequence, including
// the ones discovery adds during the window, and leaves them accepting.
func TestTerminationDrainsEveryListener(t *testing.T) {
	s := startListenerServer(t, ldsBootstrap(t, hcmListener("static", "s", "")),
		"--drain-strategy", "immediate", "--termination-drain-time-s", "60")
	s.life.setPhase(phaseInitialized)
	term := s.startTermination()
	defer term.stop()

	if got := s.State(); got != adminv3.ServerInfo_DRAINING {
		t.Errorf("state during the termination drain = %v, want DRAINING", got)
	}
	if !s.HealthChecksFailed() {
		t.Error("health checks pass during the termination drain")
	}
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: parseListeners(t, hcmListener("dyn", "d", ""))}); err != nil {
		t.Fatal(err)
	}
	for _, bl := range s.activeListeners() {
		if !bl.Drain().Draining() || !bl.Drain().DrainClose() {
			t.Errorf("listener %s is not draining (immediate) during the termination drain", bl.Name())
		}
		if code, body, err := fetch(t, bl.Addr().String(), "/"); err != nil || code != 200 {
			t.Errorf("listener %s does not serve during the termination drain: %d %q %v", bl.Name(), code, body, err)
		}
	}
	if s.noConnectionsLeft(term) {
		t.Error("the connection count started before its settling second")
	}
}
