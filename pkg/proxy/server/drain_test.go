package server

import (
	"io"
	"net"
	"net/http"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// refuses reports whether a listener address refuses new connections.
func refuses(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, netTimeout)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

// twoDirections is a bootstrap with an INBOUND and an OUTBOUND listener.
func twoDirections(extra string) string {
	return extra + withListeners(
		hcmListener("ingress", "in", "traffic_direction: INBOUND"),
		hcmListener("egress", "out", "traffic_direction: OUTBOUND"),
	)
}

func TestDrainListenersStopsAtOnce(t *testing.T) {
	s := startListenerServer(t, twoDirections(""))
	s.life.setPhase(phaseInitialized)
	in, out := listenerAddr(t, s, "ingress"), listenerAddr(t, s, "egress")

	// A keep-alive connection opened before the drain keeps working.
	client := &http.Client{Timeout: netTimeout}
	defer client.CloseIdleConnections()
	if code, _, err := fetchWith(client, in); err != nil || code != http.StatusOK {
		t.Fatalf("before the drain: %d %v", code, err)
	}

	if err := s.DrainListeners(true, false, false); err != nil {
		t.Fatal(err)
	}
	if !refuses(in) {
		t.Error("the inbound listener still accepts after an inboundonly drain")
	}
	if refuses(out) {
		t.Error("an inboundonly drain stopped the outbound listener")
	}
	if code, body, err := fetchWith(client, in); err != nil || code != http.StatusOK || body != "in" {
		t.Errorf("a connection accepted before the drain answered %d %q %v, want 200 in", code, body, err)
	}
	if got := s.stats.Counter("listener_manager.listener_stopped").Value(); got != 1 {
		t.Errorf("listener_stopped = %d, want 1", got)
	}

	if err := s.DrainListeners(false, false, false); err != nil {
		t.Fatal(err)
	}
	if !refuses(out) {
		t.Error("the outbound listener still accepts after a drain of all listeners")
	}
	if got := s.stats.Counter("listener_manager.listener_stopped").Value(); got != 2 {
		t.Errorf("listener_stopped = %d, want 2 (each listener counted once)", got)
	}
	if n := len(s.Listeners().GetListenerStatuses()); n != 2 {
		t.Errorf("/listeners lists %d listeners after the drain, want both still", n)
	}
	if st := s.State(); st != adminv3.ServerInfo_LIVE {
		t.Errorf("state after the drain = %v, want LIVE", st)
	}
	if s.HealthChecksFailed() {
		t.Error("a listener drain failed the health checks")
	}
}

func TestDrainListenersSkipExit(t *testing.T) {
	t.Run("needs graceful", func(t *testing.T) {
		s := startListenerServer(t, twoDirections(""))
		err := s.DrainListeners(false, false, true)
		if err == nil || err.Error() != "skip_exit requires graceful" {
			t.Fatalf("error = %v, want skip_exit requires graceful", err)
		}
		for _, bl := range s.activeListeners() {
			if bl.Stopped() || bl.Drain().Draining() {
				t.Errorf("%s changed by a refused drain", bl.Name())
			}
		}
	})
	t.Run("runtime guard drains without stopping", func(t *testing.T) {
		s := startListenerServer(t, twoDirections(`layered_runtime: {layers: [{name: static, static_layer: {`+
			NonGracefulDrainRuntimeKey+`: true}}]}
`))
		if err := s.DrainListeners(false, false, true); err != nil {
			t.Fatal(err)
		}
		for _, bl := range s.activeListeners() {
			if bl.Stopped() || !bl.Drain().Draining() {
				t.Errorf("%s: stopped %v, draining %v; want draining and accepting", bl.Name(), bl.Stopped(), bl.Drain().Draining())
			}
		}
	})
	t.Run("graceful keeps accepting", func(t *testing.T) {
		s := startListenerServer(t, twoDirections(""), "--drain-time-s", "0", "--drain-strategy", "immediate")
		if err := s.DrainListeners(false, true, true); err != nil {
			t.Fatal(err)
		}
		for _, bl := range s.activeListeners() {
			if !bl.Drain().Draining() || !bl.Drain().DrainClose() {
				t.Errorf("%s is not draining", bl.Name())
			}
			if refuses(bl.Addr().String()) {
				t.Errorf("%s stopped despite skip_exit", bl.Name())
			}
		}
	})
}

func TestDrainListenersGraceful(t *testing.T) {
	t.Run("stops at the end of the drain time", func(t *testing.T) {
		s := startListenerServer(t, twoDirections(""), "--drain-time-s", "0")
		if err := s.DrainListeners(true, true, false); err != nil {
			t.Fatal(err)
		}
		in, out := s.activeListeners()[0], s.activeListeners()[1]
		waitUntil(t, "the inbound listener to stop", in.Stopped)
		if !in.Drain().Draining() || out.Drain().Draining() || out.Stopped() {
			t.Errorf("inbound draining %v; outbound draining %v, stopped %v; want only the inbound one drained",
				in.Drain().Draining(), out.Drain().Draining(), out.Stopped())
		}
		if !refuses(in.Addr().String()) {
			t.Error("the drained listener still accepts")
		}
	})
	t.Run("accepts during the drain time", func(t *testing.T) {
		s := startListenerServer(t, twoDirections(""), "--drain-time-s", "600")
		if err := s.DrainListeners(false, true, false); err != nil {
			t.Fatal(err)
		}
		if err := s.DrainListeners(true, true, false); err != nil {
			t.Fatal(err)
		}
		for _, bl := range s.activeListeners() {
			if !bl.Drain().Draining() {
				t.Errorf("%s is not draining", bl.Name())
			}
			if code, _, err := fetch(t, bl.Addr().String(), "/"); err != nil || code != http.StatusOK {
				t.Errorf("%s during its drain: %d %v, want new connections served", bl.Name(), code, err)
			}
		}
		if got := s.stats.Counter("listener_manager.listener_stopped").Value(); got != 0 {
			t.Errorf("listener_stopped = %d during the drain, want 0", got)
		}
	})
}

func TestHealthChecksFailed(t *testing.T) {
	s := startListenerServer(t, twoDirections(""))
	s.life.setPhase(phaseInitialized)
	drain := s.activeListeners()[0].Drain()
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"live", func() {}, false},
		{"healthcheck fail", s.FailHealthChecks, true},
		{"healthcheck ok", s.PassHealthChecks, false},
		{"shutdown", s.life.startShutdown, true},
	}
	for _, st := range steps {
		st.do()
		if got := s.HealthChecksFailed(); got != st.want {
			t.Errorf("%s: HealthChecksFailed = %v, want %v", st.name, got, st.want)
		}
		// Envoy closes every connection of a DEFAULT-drain listener while
		// health checks fail, drain or not.
		if got := drain.DrainClose(); got != st.want {
			t.Errorf("%s: DrainClose = %v, want %v", st.name, got, st.want)
		}
	}
}

// fetchWith GETs / from addr with client, reusing its connections.
func fetchWith(client *http.Client, addr string) (int, string, error) {
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
