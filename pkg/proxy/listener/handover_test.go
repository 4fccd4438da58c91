package listener

import (
	"net"
	"strconv"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestBindFromTakesTheSocketsOver replaces a serving listener by one whose
// filter chain answers differently: connections opened before the update
// stay with the old chain, every later one reaches the new chain, the
// OS-chosen port is kept, and no connection is refused on the way.
func TestBindFromTakesTheSocketsOver(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(map[int]string{1: "one worker", 3: "three workers"}[workers], func(t *testing.T) {
			store := stats.NewStore()
			old := buildListener(t, store, workers, `{name: l, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{name: old}]}`)
			addr := serve(t, old)
			before, err := net.DialTimeout("tcp", addr, ioTimeout)
			if err != nil {
				t.Fatal(err)
			}
			defer before.Close()
			if got := roundTrip(t, before, "a"); got != "old:a" {
				t.Fatalf("before the update: %q", got)
			}

			next := buildListener(t, store, workers, `{name: l, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{name: new}]}`)
			if err := next.BindFrom(old); err != nil {
				t.Fatal(err)
			}
			if got := next.Addr().String(); got != addr {
				t.Errorf("the updated listener is on %s, want the old port %s", got, addr)
			}
			if !old.Stopped() {
				t.Error("the old listener still accepts after the hand-over")
			}
			select {
			case <-old.Done():
			case <-timeAfter():
				t.Fatal("the old listener's Serve did not return after the hand-over")
			}
			// Connections made before the new listener serves wait in the
			// accept queue rather than being refused.
			queued, err := net.DialTimeout("tcp", addr, ioTimeout)
			if err != nil {
				t.Fatalf("a connection during the hand-over was refused: %v", err)
			}
			defer queued.Close()
			addrServed := serve(t, next)
			if addrServed != addr {
				t.Errorf("serving on %s, want %s", addrServed, addr)
			}
			if got := roundTrip(t, queued, "b"); got != "new:b" {
				t.Errorf("a connection queued during the hand-over answered %q, want new:b", got)
			}
			for i := range 2 * workers {
				if got := exchange(t, addr, "c"); got != "new:c" {
					t.Fatalf("connection %d after the update answered %q, want new:c", i, got)
				}
			}
			if got := roundTrip(t, before, "d"); got != "old:d" {
				t.Errorf("a connection accepted before the update answered %q, want old:d", got)
			}
		})
	}
}

// TestBindFromOtherAddress binds afresh when the address changed, closing
// nothing of the old listener, which keeps serving until its owner stops
// it.
func TestBindFromOtherAddress(t *testing.T) {
	store := stats.NewStore()
	old := buildListener(t, store, 1, `{name: l, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{name: old}]}`)
	oldAddr := serve(t, old)
	next := buildListener(t, store, 1, `{name: l, address: {socket_address: {address: 127.0.0.2}}, filter_chains: [{name: new}]}`)
	if err := next.BindFrom(old); err != nil {
		t.Fatal(err)
	}
	newAddr := serve(t, next)
	if old.Stopped() {
		t.Error("binding another address stopped the old listener")
	}
	if got := exchange(t, oldAddr, "a"); got != "old:a" {
		t.Errorf("old address answered %q", got)
	}
	if got := exchange(t, newAddr, "a"); got != "new:a" {
		t.Errorf("new address answered %q", got)
	}
}

// TestBindFromStoppedListener binds afresh when the old listener was
// stopped (its sockets are closed): the port is then free again.
func TestBindFromStoppedListener(t *testing.T) {
	store := stats.NewStore()
	old := buildListener(t, store, 1, `{name: l, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{name: old}]}`)
	addr := serve(t, old)
	old.Stop()
	port := old.Addr().(*net.TCPAddr).Port
	next := buildListener(t, store, 1, `{name: l, address: {socket_address: {address: 127.0.0.1, port_value: `+strconv.Itoa(port)+`}}, filter_chains: [{name: new}]}`)
	if err := next.BindFrom(old); err != nil {
		t.Fatal(err)
	}
	serve(t, next)
	if got := exchange(t, addr, "a"); got != "new:a" {
		t.Errorf("answered %q, want new:a", got)
	}
}

// TestBindFromFailureKeepsTheOldListener leaves the old listener serving
// when the new one cannot bind one of its addresses.
func TestBindFromFailureKeepsTheOldListener(t *testing.T) {
	store := stats.NewStore()
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	old := buildListener(t, store, 1, `{name: l, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{name: old}]}`)
	addr := serve(t, old)
	next := buildListener(t, store, 1, `{name: l, address: {socket_address: {address: 127.0.0.1}}, additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: `+strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)+`}}}], enable_reuse_port: false, filter_chains: [{name: new}]}`)
	if err := next.BindFrom(old); err == nil {
		t.Fatal("BindFrom succeeded on a busy address")
	}
	if old.Stopped() {
		t.Fatal("a failed update stopped the old listener")
	}
	if got := exchange(t, addr, "a"); got != "old:a" {
		t.Errorf("the old listener answered %q after a failed update", got)
	}
}
