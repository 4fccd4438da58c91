package hotrestart

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// fakeHost is a parent with one real listening socket.
type fakeHost struct {
	ln                          *net.TCPListener
	adminClosed, drained, ended atomic.Bool
}

func (h *fakeHost) ListenSockets(network, address string, n int) []*os.File {
	if network != "tcp4" || address != h.ln.Addr().String() || n != 1 {
		return nil
	}
	f, err := h.ln.File()
	if err != nil {
		return nil
	}
	return []*os.File{f}
}
func (h *fakeHost) ShutdownAdmin() { h.adminClosed.Store(true) }
func (h *fakeHost) Stats() (map[string]uint64, map[string]int64) {
	c := map[string]uint64{"http.x.rq_total": 7}
	g := map[string]int64{"http.x.cx_active": 2, "server.uptime": 99}
	for i := range 3 * statsChunk { // several chunks
		c[fmt.Sprintf("c.%d", i)] = uint64(i)
	}
	return c, g
}
func (h *fakeHost) DrainListeners() { h.drained.Store(true) }
func (h *fakeHost) Terminate()      { h.ended.Store(true) }

func TestParentAndChild(t *testing.T) {
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	host := &fakeHost{ln: ln}
	name := SocketName("@hotrestart_test", uint32(rand.IntN(1<<30)), 0)
	start := time.Unix(1000, 0)
	p, err := Listen(ParentConfig{Name: name, Version: "1.60.16384", OriginalStart: start, Generation: 4}, host, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	if _, err := Connect(name, "1.60.100"); !errors.As(err, new(*VersionMismatchError)) {
		t.Fatalf("a different version: got %v, want a VersionMismatchError", err)
	}
	ch, err := Connect(name, "1.60.16384")
	if err != nil {
		t.Fatal(err)
	}
	if !ch.OriginalStart.Equal(start) || ch.ParentGeneration != 4 {
		t.Errorf("hello: start %v generation %d", ch.OriginalStart, ch.ParentGeneration)
	}
	if err := ch.ShutdownAdmin(); err != nil || !host.adminClosed.Load() {
		t.Errorf("shutdown admin: %v, closed %v", err, host.adminClosed.Load())
	}
	none, err := ch.ListenSockets("tcp4", "127.0.0.1:1", 1)
	if err != nil || none != nil {
		t.Errorf("unknown address: %v %v", none, err)
	}
	socks, err := ch.ListenSockets("tcp4", ln.Addr().String(), 1)
	if err != nil || len(socks) != 1 {
		t.Fatalf("passed socket: %v %v", socks, err)
	}
	defer socks[0].Close()
	// The passed socket accepts a connection made to the parent's address.
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := socks[0].Accept()
	if err != nil {
		t.Fatal(err)
	}
	a.Close()

	counters, gauges, err := ch.Stats()
	if err != nil || counters["http.x.rq_total"] != 7 || len(counters) != 3*statsChunk+1 || gauges["http.x.cx_active"] != 2 {
		t.Fatalf("stats: %d counters, %v, %v", len(counters), gauges, err)
	}
	if err := ch.DrainParent(); err != nil || !host.drained.Load() {
		t.Errorf("drain: %v %v", err, host.drained.Load())
	}
	if err := ch.TerminateParent(); err != nil {
		t.Errorf("terminate: %v", err)
	}
	// The parent answers before it terminates (it may exit doing so).
	for deadline := time.Now().Add(5 * time.Second); !host.ended.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !host.ended.Load() {
		t.Error("the parent did not terminate")
	}
}

func TestNoParent(t *testing.T) {
	name := SocketName("@hotrestart_test_none", uint32(rand.IntN(1<<30)), 0)
	if _, err := Connect(name, "v"); !errors.Is(err, errNoParent) {
		t.Fatalf("got %v, want errNoParent", err)
	}
}

func TestFilesystemSocketMode(t *testing.T) {
	name := filepath.Join(t.TempDir(), "hr.sock_parent_0")
	p, err := Listen(ParentConfig{Name: name, Mode: 0o640, Version: "v"}, &fakeHost{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	p.Close()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
}

type target struct {
	c map[string]uint64
	g map[string]int64
}

func (t *target) AddCounter(n string, d uint64) { t.c[n] += d }
func (t *target) AddGauge(n string, d int64)    { t.g[n] += d }

func TestStatsMerger(t *testing.T) {
	tg := &target{c: map[string]uint64{"rq": 1}, g: map[string]int64{"cx": 1, "server.live": 1}}
	m := NewStatsMerger()
	m.Merge(tg, map[string]uint64{"rq": 5}, map[string]int64{"cx": 3, "server.live": 1})
	m.Merge(tg, map[string]uint64{"rq": 8}, map[string]int64{"cx": 2, "server.live": 1})
	if tg.c["rq"] != 9 || tg.g["cx"] != 3 || tg.g["server.live"] != 1 {
		t.Fatalf("merged: %v %v", tg.c, tg.g)
	}
	m.ParentGone(tg)
	if tg.c["rq"] != 9 || tg.g["cx"] != 1 {
		t.Fatalf("after the parent: %v %v", tg.c, tg.g)
	}
}
