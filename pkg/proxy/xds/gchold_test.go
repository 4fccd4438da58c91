package xds

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// gcSettings reads the collector's percent and memory limit without
// changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestHoldGCRestores checks that a hold turns the collector off under a
// finite memory limit and puts both back, that a hold overlapping another
// leaves the settings to the first (the first to end turns the collector
// back on, and the later release changes nothing), and that a collector
// turned off by the user is left alone.
func TestHoldGCRestores(t *testing.T) {
	percent, limit := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)

	// The goal read with the collector on (off, the runtime reports some
	// 2^63 bytes); 64 MiB of slack for a cycle that would move it.
	goal := heapGoal(t)
	release := holdGC(0)
	p, l := gcSettings()
	if p != -1 || l < heldGCHeadroom || l > goal+heldGCHeadroom+64<<20 {
		t.Fatalf("held: percent %d, limit %d; want -1 and the heap goal (%d) plus the headroom", p, l, goal)
	}
	inner := holdGC(0)
	if p2, l2 := gcSettings(); p2 != -1 || l2 != l {
		t.Fatalf("overlapping hold changed the settings to %d, %d", p2, l2)
	}
	release()
	if p, l := gcSettings(); p != 100 || l != math.MaxInt64 {
		t.Fatalf("released: percent %d, limit %d; want 100 and no limit", p, l)
	}
	inner()
	if p, l := gcSettings(); p != 100 || l != math.MaxInt64 {
		t.Fatalf("the overlapping hold's release changed the settings to %d, %d", p, l)
	}

	// A lower limit of the user's stays.
	debug.SetMemoryLimit(64 << 20)
	release = holdGC(0)
	if _, l := gcSettings(); l != 64<<20 {
		t.Fatalf("held under a 64 MiB limit: limit %d", l)
	}
	release()
	if _, l := gcSettings(); l != 64<<20 {
		t.Fatalf("released: limit %d, want 64 MiB", l)
	}

	// GOGC=off is the user's: left alone.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(math.MaxInt64)
	release = holdGC(0)
	if p, l := gcSettings(); p != -1 || l != math.MaxInt64 {
		t.Fatalf("held with the collector off: percent %d, limit %d", p, l)
	}
	release()
	if p, l := gcSettings(); p != -1 || l != math.MaxInt64 {
		t.Fatalf("released with the collector off: percent %d, limit %d", p, l)
	}
}

// TestADSHoldsGCForLargeResponses checks over a real stream that a
// response of heldGCResources resources is applied with the collector
// off, a smaller one with it on, and that it is on again after each.
func TestADSHoldsGCForLargeResponses(t *testing.T) {
	percent, limit := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	debug.SetGCPercent(100)
	srv, conn := startScriptedADS(t)
	store := stats.NewStore()
	ads, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{Id: "n1"}, Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	applied := make(chan int, 4) // the percent seen by each apply
	_, err = ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("listener_manager.lds.")}, func(u Update) error {
		p, _ := gcSettings()
		applied <- p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ads.Close() })
	srv.next(t)
	for _, n := range []int{heldGCResources, heldGCResources - 1} {
		ls := make([]proto.Message, n)
		for i := range ls {
			ls[i] = &listenerv3.Listener{Name: "l" + strconv.Itoa(i)}
		}
		srv.responses <- response(t, strconv.Itoa(n), "n"+strconv.Itoa(n), ls...)
		if ack := srv.next(t); ack.GetErrorDetail() != nil {
			t.Fatalf("%d listeners: NACK %v", n, ack.GetErrorDetail())
		}
		if p := receive(t, applied); (p == -1) != (n >= heldGCResources) {
			t.Errorf("%d listeners applied with GC percent %d", n, p)
		}
		if p, _ := gcSettings(); p != 100 {
			t.Errorf("after %d listeners, GC percent %d", n, p)
		}
	}
}

// heapGoal is the collector's current heap goal.
func heapGoal(t *testing.T) int64 {
	t.Helper()
	sample := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		t.Fatal("no heap goal")
	}
	return int64(sample[0].Value.Uint64())
}

// TestHoldGCCappedByCgroup checks that the cgroup's memory limit caps a
// hold's soft limit at heldGCCgroupShare of it, that a cap at or under
// the heap goal holds nothing (the collector stays on, the limit as it
// was), and that a larger limit leaves the headroom alone.
func TestHoldGCCappedByCgroup(t *testing.T) {
	percent, limit := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)

	goal := heapGoal(t)
	// A cap halfway through the headroom.
	max := uint64(float64(goal+heldGCHeadroom/2) / heldGCCgroupShare)
	release := holdGC(max)
	p, l := gcSettings()
	release()
	if want := int64(float64(max) * heldGCCgroupShare); p != -1 || l != want {
		t.Fatalf("held under a cgroup limit of %d: percent %d, limit %d; want -1 and %d", max, p, l, want)
	}
	if p, l := gcSettings(); p != 100 || l != math.MaxInt64 {
		t.Fatalf("released: percent %d, limit %d; want 100 and no limit", p, l)
	}

	// A cap under the heap goal: no hold.
	release = holdGC(uint64(goal / 2))
	if p, l := gcSettings(); p != 100 || l != math.MaxInt64 {
		t.Fatalf("cgroup limit under the heap goal %d: percent %d, limit %d; want no hold", goal, p, l)
	}
	release()
	if p, l := gcSettings(); p != 100 || l != math.MaxInt64 {
		t.Fatalf("released a hold that did nothing: percent %d, limit %d", p, l)
	}

	// A cgroup far larger than the heap: the headroom decides.
	release = holdGC(1 << 44)
	_, l = gcSettings()
	release()
	if l > heapGoal(t)+heldGCHeadroom || l < goal+heldGCHeadroom/2 {
		t.Fatalf("held under a 16 TiB cgroup: limit %d, want the goal (%d) plus the headroom", l, goal)
	}
}

// TestCgroupMemoryMax reads v2's and v1's limit files under a fake root.
func TestCgroupMemoryMax(t *testing.T) {
	write := func(t *testing.T, root, name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"v2 limit", map[string]string{cgroupV2MemoryMax: "268435456\n"}, 256 << 20},
		{"v2 no limit", map[string]string{cgroupV2MemoryMax: "max\n"}, 0},
		{"v2 before v1", map[string]string{cgroupV2MemoryMax: "1048576\n", cgroupV1MemoryMax: "2097152\n"}, 1 << 20},
		{"v1 limit", map[string]string{cgroupV1MemoryMax: "536870912\n"}, 512 << 20},
		{"v1 no limit", map[string]string{cgroupV1MemoryMax: "9223372036854771712\n"}, 0},
		{"v1 minus one", map[string]string{cgroupV1MemoryMax: "-1\n"}, 0},
		{"malformed", map[string]string{cgroupV2MemoryMax: "lots\n"}, 0},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range tc.files {
				write(t, root, name, text)
			}
			if got := cgroupMemoryMax(root); got != tc.want {
				t.Fatalf("cgroupMemoryMax = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestADSHoldCappedByHostRootCgroup checks over a real stream that a
// large response's hold reads the cgroup's limit under HostRoot: the
// apply sees the soft limit capped by it.
func TestADSHoldCappedByHostRootCgroup(t *testing.T) {
	percent, limit := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/fs/cgroup"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Far enough above the heap goal that the listeners' decoding does
	// not reach it, far enough under the headroom that it caps.
	max := uint64(float64(heapGoal(t)+heldGCHeadroom/2) / heldGCCgroupShare)
	if err := os.WriteFile(filepath.Join(root, cgroupV2MemoryMax), []byte(strconv.FormatUint(max, 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, conn := startScriptedADS(t)
	store := stats.NewStore()
	ads, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{Id: "n1"}, Stats: store, HostRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	applied := make(chan int64, 1) // the memory limit seen by the apply
	_, err = ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("listener_manager.lds.")}, func(u Update) error {
		_, l := gcSettings()
		applied <- l
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ads.Close() })
	srv.next(t)
	ls := make([]proto.Message, heldGCResources)
	for i := range ls {
		ls[i] = &listenerv3.Listener{Name: "l" + strconv.Itoa(i)}
	}
	srv.responses <- response(t, "1", "n1", ls...)
	if ack := srv.next(t); ack.GetErrorDetail() != nil {
		t.Fatalf("NACK %v", ack.GetErrorDetail())
	}
	if l, want := receive(t, applied), int64(float64(max)*heldGCCgroupShare); l != want {
		t.Errorf("applied under the memory limit %d, want %d (%.3f of the cgroup's %d)", l, want, heldGCCgroupShare, max)
	}
	if _, l := gcSettings(); l != math.MaxInt64 {
		t.Errorf("after the response, memory limit %d", l)
	}
}
