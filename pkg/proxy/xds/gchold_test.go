package xds

import (
	"math"
	"runtime/debug"
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

	release := holdGC()
	p, l := gcSettings()
	if p != -1 || l == math.MaxInt64 || l < heldGCHeadroom {
		t.Fatalf("held: percent %d, limit %d; want -1 and a limit above the headroom", p, l)
	}
	inner := holdGC()
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
	release = holdGC()
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
	release = holdGC()
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
