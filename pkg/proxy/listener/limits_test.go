package listener

import (
	"bufio"
	"errors"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fakeOverload is an overload manager the test drives: a global limit
// (counting like the real one), a reject switch and a pause switch.
type fakeOverload struct {
	limit  atomic.Int64
	open   atomic.Int64
	reject atomic.Bool

	mu      sync.Mutex
	paused  bool
	changed chan struct{}
}

func newFakeOverload() *fakeOverload {
	f := &fakeOverload{changed: make(chan struct{})}
	f.limit.Store(math.MaxInt64)
	return f
}

func (f *fakeOverload) AcceptState() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused, f.changed
}

func (f *fakeOverload) setPaused(p bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = p
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeOverload) RejectConnection() bool { return f.reject.Load() }

func (f *fakeOverload) AcquireConnection(enforce bool) bool {
	for {
		cur := f.open.Load()
		if enforce && cur >= f.limit.Load() {
			return false
		}
		if f.open.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

func (f *fakeOverload) ReleaseConnection() { f.open.Add(-1) }

// limitListener builds and serves a listener named "limited" on
// 127.0.0.1:0 with echo chains, the overload manager ov and runtime rt;
// extra adds listener fields.
func limitListener(t *testing.T, store *stats.Store, workers int, ov Overload, rt *runtime.Runtime, extra string) (*Listener, string) {
	t.Helper()
	deps := testDeps(store, workers)
	deps.Overload = ov
	deps.Runtime = rt
	l, err := Build(parseListener(t, `
name: limited
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: echo}]
`+extra), deps)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return l, serve(t, l)
}

// openConn dials addr and completes one exchange, so the connection is
// known to be admitted; the test closes it or leaves it to the cleanup.
func openConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if got := roundTrip(t, c, "hi"); got != "echo:hi" {
		t.Fatalf("answer = %q, want echo:hi", got)
	}
	return c
}

// refused reports whether a connection to addr is closed by the listener
// without an answer.
func refused(t *testing.T, addr string) bool {
	t.Helper()
	return exchange(t, addr, "hi") == ""
}

// counterValue reads a listener counter of "listener.127.0.0.1_0.".
func counterValue(store *stats.Store, name string) uint64 {
	return store.Counter("listener.127.0.0.1_0." + name).Value()
}

func TestGlobalConnectionLimit(t *testing.T) {
	store := stats.NewStore()
	ov := newFakeOverload()
	ov.limit.Store(2)
	l, addr := limitListener(t, store, 2, ov, nil, "")
	a := openConn(t, addr)
	openConn(t, addr)
	for range 2 {
		if !refused(t, addr) {
			t.Fatal("a connection past the global limit was served")
		}
	}
	if got := counterValue(store, "downstream_global_cx_overflow"); got != 2 {
		t.Errorf("downstream_global_cx_overflow = %d, want 2", got)
	}
	if got := counterValue(store, "downstream_cx_total"); got != 2 {
		t.Errorf("downstream_cx_total = %d, want 2 (refused connections are not counted)", got)
	}
	a.Close()
	eventually(t, "the closed connection to be released", func() bool { return ov.open.Load() == 1 && l.ActiveConnections() == 1 })
	openConn(t, addr)
	if got := ov.open.Load(); got != 2 {
		t.Errorf("global count = %d, want 2", got)
	}
}

func TestIgnoreGlobalConnLimit(t *testing.T) {
	store := stats.NewStore()
	ov := newFakeOverload()
	ov.limit.Store(0)
	_, addr := limitListener(t, store, 1, ov, nil, "ignore_global_conn_limit: true")
	openConn(t, addr)
	openConn(t, addr)
	if got := ov.open.Load(); got != 2 {
		t.Errorf("global count = %d, want 2: connections that ignore the limit still count", got)
	}
	if got := counterValue(store, "downstream_global_cx_overflow"); got != 0 {
		t.Errorf("downstream_global_cx_overflow = %d, want 0", got)
	}
}

func TestRejectIncomingConnections(t *testing.T) {
	store := stats.NewStore()
	ov := newFakeOverload()
	_, addr := limitListener(t, store, 1, ov, nil, "")
	ov.reject.Store(true)
	for range 3 {
		if !refused(t, addr) {
			t.Fatal("a rejected connection was served")
		}
	}
	if got := counterValue(store, "downstream_cx_overload_reject"); got != 3 {
		t.Errorf("downstream_cx_overload_reject = %d, want 3", got)
	}
	if got := ov.open.Load(); got != 0 {
		t.Errorf("global count = %d, want 0: rejected connections are released", got)
	}
	ov.reject.Store(false)
	openConn(t, addr)
	if got := counterValue(store, "downstream_cx_total"); got != 1 {
		t.Errorf("downstream_cx_total = %d, want 1", got)
	}
}

// TestStopAcceptingConnections: while paused, the listener accepts
// nothing (the kernel completes the handshake and queues the connection);
// on resume the queued connection is served.
func TestStopAcceptingConnections(t *testing.T) {
	for name, extra := range map[string]string{"reuse port": "", "shared socket": "enable_reuse_port: false"} {
		t.Run(name, func(t *testing.T) {
			store := stats.NewStore()
			ov := newFakeOverload()
			_, addr := limitListener(t, store, 2, ov, nil, extra)
			openConn(t, addr) // the loops are running and blocked in Accept
			ov.setPaused(true)
			// The pause is asynchronous: wait until a new connection is
			// no longer served.
			var queued net.Conn
			var r *bufio.Reader
			eventually(t, "the pause", func() bool {
				c, err := net.DialTimeout("tcp", addr, ioTimeout)
				if err != nil {
					t.Fatalf("dial while paused: %v (the kernel should queue it)", err)
				}
				_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := c.Write([]byte("queued\n")); err != nil {
					t.Fatal(err)
				}
				r = bufio.NewReader(c)
				_, err = r.ReadString('\n')
				if err == nil {
					c.Close()
					return false
				}
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read while paused: %v, want a timeout", err)
				}
				queued = c
				return true
			})
			defer queued.Close()
			total := counterValue(store, "downstream_cx_total")
			time.Sleep(100 * time.Millisecond)
			if got := counterValue(store, "downstream_cx_total"); got != total {
				t.Fatalf("downstream_cx_total moved from %d to %d while paused", total, got)
			}
			ov.setPaused(false)
			_ = queued.SetDeadline(time.Now().Add(ioTimeout))
			got, err := r.ReadString('\n')
			if err != nil || got != "echo:queued\n" {
				t.Fatalf("queued connection after resume: %q, %v", got, err)
			}
		})
	}
}

// adminLayerRuntime is a runtime with an admin layer.
func adminLayerRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{{
		Name:           "admin",
		LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}},
	}}}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestListenerConnectionLimit: the runtime key
// envoy.resource_limits.listener.<name>.connection_limit limits the
// listener's open connections, read at each accept; the proxy. spelling
// wins over the envoy. one.
func TestListenerConnectionLimit(t *testing.T) {
	store := stats.NewStore()
	rt := adminLayerRuntime(t)
	ov := newFakeOverload()
	l, addr := limitListener(t, store, 2, ov, rt, "")
	modify := func(pairs map[string]string) {
		t.Helper()
		if err := rt.Modify(pairs); err != nil {
			t.Fatal(err)
		}
	}
	modify(map[string]string{"envoy.resource_limits.listener.limited.connection_limit": "1"})
	openConn(t, addr)
	if !refused(t, addr) {
		t.Fatal("a connection past the listener limit was served")
	}
	if got := counterValue(store, "downstream_cx_overflow"); got != 1 {
		t.Errorf("downstream_cx_overflow = %d, want 1", got)
	}
	if ov.open.Load() != 1 || l.ActiveConnections() != 1 {
		t.Errorf("global count %d, listener count %d; want 1 and 1 (the refused one released)", ov.open.Load(), l.ActiveConnections())
	}
	modify(map[string]string{"envoy.resource_limits.listener.limited.connection_limit": "2"})
	openConn(t, addr)
	if !refused(t, addr) {
		t.Fatal("a connection past the raised limit was served")
	}
	modify(map[string]string{"proxy.resource_limits.listener.limited.connection_limit": "3"})
	openConn(t, addr)
	if !refused(t, addr) {
		t.Fatal("a connection past the proxy. key's limit was served")
	}
	if got := counterValue(store, "downstream_cx_overflow"); got != 3 {
		t.Errorf("downstream_cx_overflow = %d, want 3", got)
	}
	modify(map[string]string{"proxy.resource_limits.listener.limited.connection_limit": "", "envoy.resource_limits.listener.limited.connection_limit": ""})
	openConn(t, addr)
}

// TestExactBalance: with exact_balance each connection counts for the
// worker with the fewest active connections, so the per-worker gauges
// stay balanced however the kernel spreads the connections.
func TestExactBalance(t *testing.T) {
	for name, extra := range map[string]string{
		"reuse port":    "connection_balance_config: {exact_balance: {}}",
		"shared socket": "connection_balance_config: {exact_balance: {}}\nenable_reuse_port: false",
	} {
		t.Run(name, func(t *testing.T) {
			store := stats.NewStore()
			l, addr := limitListener(t, store, 3, nil, nil, extra)
			active := func() []int64 {
				var out []int64
				for w := range 3 {
					out = append(out, store.Gauge("listener.127.0.0.1_0.worker_"+string(rune('0'+w))+".downstream_cx_active").Value())
				}
				return out
			}
			var conns []net.Conn
			for i := range 6 {
				conns = append(conns, openConn(t, addr))
				if a := active(); spread(a) > 1 {
					t.Fatalf("after %d connections: per-worker active %v", i+1, a)
				}
			}
			if a := active(); a[0] != 2 || a[1] != 2 || a[2] != 2 {
				t.Fatalf("per-worker active = %v, want [2 2 2]", a)
			}
			// Close two connections; the next two go where room is.
			conns[0].Close()
			conns[1].Close()
			eventually(t, "the closes", func() bool { return l.ActiveConnections() == 4 })
			openConn(t, addr)
			openConn(t, addr)
			if a := active(); a[0] != 2 || a[1] != 2 || a[2] != 2 {
				t.Fatalf("per-worker active after closes and reopens = %v, want [2 2 2]", a)
			}
		})
	}
}

// spread is the difference between the largest and smallest values.
func spread(v []int64) int64 {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}

func TestConnectionBalanceErrors(t *testing.T) {
	tests := map[string]string{
		"connection_balance_config: {extend_balance: {name: x, typed_config: {\"@type\": type.googleapis.com/google.protobuf.Struct, value: {}}}}": "connection_balance_config.extend_balance: not supported by Outrigger",
		"connection_balance_config: {cpu_locality_balance: {}}": "connection_balance_config.cpu_locality_balance: not supported by Outrigger",
		"connection_balance_config: {}":                         "connection_balance_config: a balancer is required (exact_balance)",
	}
	for extra, want := range tests {
		t.Run(want, func(t *testing.T) {
			_, err := Build(parseListener(t, `
name: b
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: echo}]
`+extra), testDeps(stats.NewStore(), 2))
			if err == nil || err.Error() != want {
				t.Fatalf("Build error = %v, want %q", err, want)
			}
		})
	}
}
