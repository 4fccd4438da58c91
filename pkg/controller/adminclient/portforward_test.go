package adminclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient/portforwardtest"
)

// dialTo returns a port-forward DialFunc that reaches addr for pod "pod-a"
// and the requested port, and refuses other pods.
func dialTo(addr string) portforwardtest.DialFunc {
	return func(ctx context.Context, _, pod string, _ int32) (net.Conn, error) {
		if pod != "pod-a" {
			return nil, fmt.Errorf("pod %s not found", pod)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// newForwarder starts the fake API server and kubelet.
func newForwarder(t *testing.T, opts portforwardtest.Options) (*portforwardtest.Server, *adminclient.Client) {
	t.Helper()
	pf, err := portforwardtest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pf.Close)
	transport, err := adminclient.NewPortForward(pf.Config())
	if err != nil {
		t.Fatal(err)
	}
	return pf, adminclient.New(transport, 5*time.Second)
}

// TestPortForward makes admin calls through the API server's portforward
// subresource, WebSocket first and SPDY when WebSockets are refused.
func TestPortForward(t *testing.T) {
	cases := map[string]struct {
		refuseWebSockets                  bool
		wantWebSocket, wantSPDY, wantRefs int64
	}{
		"websocket":                 {wantWebSocket: 1},
		"spdy when websocket fails": {refuseWebSockets: true, wantSPDY: 1, wantRefs: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fake := newFake(t)
			pf, client := newForwarder(t, portforwardtest.Options{Dial: dialTo(fake.Addr()), RefuseWebSockets: tc.refuseWebSockets})
			s, err := client.Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", Port: 9901})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()

			if err := s.RuntimeModify(t.Context(), map[string]string{"k": "v"}); err != nil {
				t.Fatal(err)
			}
			info, err := s.ServerInfo(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.FailHealthChecks(t.Context()); err != nil {
				t.Fatal(err)
			}
			if v, _ := fake.RuntimeValue("k"); v != "v" || info.State != "LIVE" || !fake.HealthChecksFailed() {
				t.Errorf("runtime k=%q, state %s, health checks failed %t", v, info.State, fake.HealthChecksFailed())
			}
			ws, spdy, refused := pf.Upgrades()
			if ws != tc.wantWebSocket || spdy != tc.wantSPDY || refused != tc.wantRefs {
				t.Errorf("upgrades websocket=%d spdy=%d refused=%d, want %d %d %d", ws, spdy, refused, tc.wantWebSocket, tc.wantSPDY, tc.wantRefs)
			}
			// One upgraded connection, one stream per operation.
			if got := pf.Streams(); got != 3 {
				t.Errorf("%d forwarded streams, want 3", got)
			}
		})
	}
}

// TestPortForwardNothingListening reports the kubelet's error when nothing
// listens on the admin port.
func TestPortForwardNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	_, client := newForwarder(t, portforwardtest.Options{Dial: dialTo(closed)})
	s, err := client.Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", Port: 9901})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	_, err = s.ServerInfo(t.Context())
	var fe *adminclient.ForwardError
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "connection refused") {
		t.Fatalf("got %v, want the kubelet's forwarding error", err)
	}
}

// TestPortForwardUnreachableAPIServer fails to open a session, naming the
// pod, when the API server does not answer.
func TestPortForwardUnreachableAPIServer(t *testing.T) {
	pf, err := portforwardtest.New(portforwardtest.Options{Dial: dialTo("127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := pf.Config()
	pf.Close()
	transport, err := adminclient.NewPortForward(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = adminclient.New(transport, 2*time.Second).Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", Port: 9901})
	if err == nil || !strings.Contains(err.Error(), "port-forward to ns/pod-a:9901") {
		t.Fatalf("got %v, want an error naming the pod", err)
	}
}

// TestPortForwardRealSidecar drives the built sidecar (bin/sidecar, or
// $SIDECAR_BIN) through the port-forward transport.
func TestPortForwardRealSidecar(t *testing.T) {
	bin := sidecarBinary(t)
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "bootstrap.yaml")
	bootstrap := fmt.Sprintf(`admin:
  address:
    socket_address: {address: 127.0.0.1, port_value: %d}
layered_runtime:
  layers:
  - name: static
    static_layer: {existing: "1"}
  - name: admin
    admin_layer: {}
`, port)
	if err := os.WriteFile(cfg, []byte(bootstrap), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", cfg, "--log-level", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)

	_, client := newForwarder(t, portforwardtest.Options{Dial: dialTo(addr)})
	s, err := client.Session(t.Context(), adminclient.Endpoint{Namespace: "ns", Pod: "pod-a", Port: int32(port)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ctx := t.Context()
	if err := s.RuntimeModify(ctx, map[string]string{"existing": "2", "added": "x"}); err != nil {
		t.Fatal(err)
	}
	rt, err := s.Runtime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Entries["existing"].FinalValue != "2" || rt.Entries["added"].FinalValue != "x" {
		t.Errorf("runtime after modify: %+v", rt.Entries)
	}
	if err := s.SetLogLevels(ctx, map[string]string{"http": "debug"}); err != nil {
		t.Fatal(err)
	}
	levels, err := s.LogLevels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if levels["http"] != "debug" {
		t.Errorf("http logger at %q after the change", levels["http"])
	}
	info, err := s.ServerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "LIVE" {
		t.Errorf("state %q", info.State)
	}
}

// sidecarBinary finds the built sidecar, or skips: `make build` makes it.
func sidecarBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SIDECAR_BIN"); bin != "" {
		return bin
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "..", "bin", "sidecar")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no sidecar binary at %s (run make build, or set SIDECAR_BIN)", bin)
	}
	return bin
}

// freePort finds a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits, at most 10 s, for addr to accept connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening after 10s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
