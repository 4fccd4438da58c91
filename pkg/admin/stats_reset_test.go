package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// deltaSink records the counter deltas each flush sends.
type deltaSink struct{ deltas []map[string]uint64 }

func (d *deltaSink) Flush(sn *stats.Snapshot) error {
	got := map[string]uint64{}
	sn.Counters(func(name []byte, delta, _ uint64) { got[string(name)] = delta })
	d.deltas = append(d.deltas, got)
	return nil
}

// TestResetCountersKeepsSinkDeltas checks the specification's promise:
// /reset_counters zeroes the counters the admin shows, leaves gauges and
// histograms alone, and drops nothing that a metrics sink has yet to receive.
func TestResetCountersKeepsSinkDeltas(t *testing.T) {
	store := stats.NewStore()
	sink := &deltaSink{}
	flusher := stats.NewFlusher(store, []stats.Sink{sink}, stats.FlusherOptions{})
	src := &fakeStats{rec: &recorder{}, store: store, useRE2: true}
	h := newStatsAdmin(t, src).Handler()
	show := func() string {
		t.Helper()
		rec := serve(t, h, request{target: "/stats?filter=%5Ea%5C."})
		if rec.Code != http.StatusOK {
			t.Fatalf("/stats answered %d", rec.Code)
		}
		return rec.Body.String()
	}

	c := store.Counter("a.requests")
	g := store.Gauge("a.active")
	hist := store.Histogram("a.time")
	c.Add(5)
	g.Set(4)
	hist.Record(10)
	if err := flusher.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Add(3) // pending for the next flush when the reset comes

	before := show()
	if !strings.Contains(before, "a.requests: 8\n") || !strings.Contains(before, "a.active: 4\n") {
		t.Fatalf("/stats before the reset lacks the counter or the gauge:\n%s", before)
	}

	if rec := serve(t, h, request{method: "GET", target: "/reset_counters"}); rec.Code != http.StatusBadRequest || c.Value() != 8 {
		t.Fatalf("GET /reset_counters: status %d, counter %d; want 400 and no effect", rec.Code, c.Value())
	}
	if rec := serve(t, h, request{method: "POST", target: "/reset_counters"}); rec.Code != http.StatusOK || rec.Body.String() != "OK\n" {
		t.Fatalf("POST /reset_counters: %d %q", rec.Code, rec.Body.String())
	}
	// Only the counter line changes: gauges and histograms are untouched.
	want := strings.Replace(before, "a.requests: 8\n", "a.requests: 0\n", 1)
	if got := show(); got != want {
		t.Errorf("/stats after the reset:\n%s\nwant:\n%s", got, want)
	}

	c.Add(2)
	if err := flusher.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := c.Value(); got != 2 {
		t.Errorf("counter after reset and +2 = %d, want 2", got)
	}
	if len(sink.deltas) != 2 {
		t.Fatalf("%d flushes reached the sink, want 2", len(sink.deltas))
	}
	if got := sink.deltas[0]["a.requests"]; got != 5 {
		t.Errorf("first flush delta = %d, want 5", got)
	}
	if got := sink.deltas[1]["a.requests"]; got != 5 {
		t.Errorf("delta of the flush after the reset = %d, want 5 (3 before the reset, 2 after)", got)
	}
}
