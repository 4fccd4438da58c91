package listener

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/userspace"
)

const internalYAML = `
name: inner
internal_listener: {}
filter_chains:
- filters: [{name: echo}]
`

// TestInternalListenerServes: an internal listener binds nothing, shows
// its name as its address, counts under listener.envoy_internal_<name>.
// and serves an in-memory connection through its filter chain.
func TestInternalListenerServes(t *testing.T) {
	store := stats.NewStore()
	deps := testDeps(store, 2)
	deps.InternalListeners = true
	l, err := Build(parseListener(t, internalYAML), deps)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Addresses()[0].GetEnvoyInternalAddress().GetServerListenerName(); got != "inner" {
		t.Fatalf("address %v", l.Addresses())
	}
	if err := l.AcceptInternal(nil); err == nil {
		t.Fatal("accepted before serving")
	}
	if err := l.Bind(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Serve() }()
	t.Cleanup(l.Close)
	client, server := userspace.Pipe(64, userspace.Addr{Listener: "inner"})
	// Serve marks the listener serving on its own goroutine.
	deadline := time.Now().Add(ioTimeout)
	for l.AcceptInternal(server) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the internal listener never accepted")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := client.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = client.CloseWrite()
	got, err := io.ReadAll(client)
	if err != nil || string(got) != ":ping\n" {
		t.Fatalf("echo %q, %v", got, err)
	}
	if v := store.Counter("listener.envoy_internal_inner.downstream_cx_total").Value(); v != 1 {
		t.Errorf("downstream_cx_total %d", v)
	}
}

// TestInternalListenerRefusals: Envoy's checks of an internal listener.
func TestInternalListenerRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml     string
		ext      bool
		contains string
	}{
		"no bootstrap extension": {internalYAML, false, "InternalListener bootstrap extension"},
		"address":                {internalYAML + "address: {socket_address: {address: 127.0.0.1, port_value: 0}}\n", true, "address: should not be used"},
		"reuse port":             {internalYAML + "enable_reuse_port: true\n", true, "enable_reuse_port: an internal listener has no socket"},
		"socket options":         {internalYAML + "socket_options: [{level: 1, name: 2, int_value: 1}]\n", true, "socket_options: an internal listener does not support"},
		"internal address without internal_listener": {`
name: x
address: {envoy_internal_address: {server_listener_name: x}}
filter_chains:
- filters: [{name: echo}]
`, true, "use the internal_listener field instead"},
	} {
		t.Run(name, func(t *testing.T) {
			deps := testDeps(stats.NewStore(), 1)
			deps.InternalListeners = tc.ext
			_, err := Build(parseListener(t, tc.yaml), deps)
			if err == nil || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("error %v, want %q", err, tc.contains)
			}
		})
	}
}
